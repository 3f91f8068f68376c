//! [`NativeScope`]: a group of native jobs that is cancelled, counted, bounded and shut down
//! together.
//!
//! # Lifecycle
//!
//! What the scope takes is one enum, [`Lifecycle`]:
//!
//! ```text
//!         outer token cancelled (`child_of`)
//!  Open ─────────────────────────────────────▶ OuterCancelled
//!    │                                               │
//!    │ shutdown / drop                               │ shutdown / drop
//!    └──────────────────────▶ Closed ◀───────────────┘
//! ```
//!
//! - `Open`: takes jobs; `cancel_all` cancels the current generation and swaps in a fresh one.
//! - `OuterCancelled`: takes jobs, which start cancelled: the generation stays cancelled.
//! - `Closed`: takes no job (`SpawnError::ScopeClosed`); its jobs were cancelled with
//!   `Shutdown`.
//!
//! One flag stays beside it, `dispatching`: a thread is handing waiting jobs to the spawner,
//! and others leave that to it. It is a mutual exclusion for the dispatch loop, held for a
//! moment in any state (a closed scope still frees slots as its cancelled jobs finish), not a
//! step of the lifecycle.
//!
//! # Files
//!
//! This file holds the scope's API and its shared state; `spawn.rs` starts a job in it,
//! `slots.rs` is the slot limiter and a finished job's bookkeeping, `cancel.rs` cancels its
//! jobs, `idle.rs` waits for it to be empty, `shutdown.rs` shuts it down with a report.
//!
//! # Invariants
//!
//! 1. `jobs` holds exactly the scope's unfinished jobs: a job is inserted when it is spawned
//!    in the scope and removed by its `job_finished` notification, which every job sends
//!    exactly once (after its closure returned, was skipped, or was dropped unrun, and before
//!    its result is published, so a joined job is never still counted here).
//! 2. Every job of the scope runs on a child token of `generation`, so `cancel_all` is one
//!    cancel of the tree (a walk with a loop, no scan of `jobs`): it swaps in a fresh
//!    generation for later jobs and cancels the old one. Every generation is a tree child of
//!    the outer token (`child_of`), if there is one, so the outer token is an ancestor of every
//!    job: a job cancelled at the same time by something else (its request's token, cancelled
//!    by an SDK that heard the same shutdown) still reads the outer token's reason, which came
//!    first. Once the outer token is cancelled, the generation stays cancelled: jobs spawned
//!    later start cancelled.
//! 3. `holding_slot` is the number of entries of `jobs` with `holds_slot` set: jobs handed to
//!    the spawner (or run inline) and not finished. A job's slot is freed only when it
//!    finishes, that is when its closure has really returned: a cancelled job that ignores its
//!    token keeps its slot.
//! 4. `pending` holds the runnables of the jobs in `jobs` that wait for a slot, keyed by arrival
//!    (oldest first), and such a job's entry names its key. A waiting job that is cancelled
//!    finishes at once (its own cancel callback skips it), and its `job_finished` removes it
//!    from `pending` by key in O(1) (`queue.rs`): no scan, so cancelling n waiting jobs costs
//!    O(n).
//! 5. Once `Closed`, nothing is added to `jobs`.
//! 6. No user code (spawner, runnable, closure drop, waker) runs while `inner` is locked; the
//!    scope's lock and a job's lock are never held together, and no token's lock is taken
//!    while `inner` is held.

mod cancel;
mod idle;
mod shutdown;
mod slots;
mod spawn;

pub use idle::WaitIdle;
pub use shutdown::ScopeShutdown;
pub(crate) use spawn::Dispatch;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::num::NonZeroUsize;
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::callback::CallbackGuard;
use crate::job::JobControl;
use crate::job_id::JobId;
use crate::queue::WaitQueue;
use crate::reason::CancelReason;
use crate::report::ShutdownReport;
use crate::spawner::{Runnable, Spawner};
use crate::stats::{Counters, ScopeStats};
use crate::sync::{self, Arc, Condvar, Mutex};
use crate::thread_spawner::ThreadSpawner;
use crate::token::CancelSource;
use crate::token::CancelToken;

/// A group of native jobs: spawned through one [`Spawner`], cancelled together, counted, and
/// shut down with a deadline that reports who did not make it.
///
/// Dropping the scope cancels all its jobs with [`CancelReason::Shutdown`] without blocking.
///
/// ```
/// use std::time::Duration;
/// use tethered::NativeScope;
///
/// let scope = NativeScope::new();
/// for i in 0..4u32 {
///     scope.spawn(move |token| {
///         while !token.is_cancelled() {
///             std::thread::yield_now(); // a slice of work
///         }
///         i
///     })?
///     .detach(); // the scope keeps track
/// }
/// assert_eq!(scope.len(), 4);
/// let report = scope.shutdown_blocking(Duration::from_secs(10));
/// assert_eq!(report.returned, 4);
/// assert!(report.stragglers.is_empty());
/// assert_eq!(scope.len(), 0);
/// # Ok::<(), tethered::SpawnError>(())
/// ```
pub struct NativeScope {
    pub(crate) state: Arc<ScopeState>,
}

pub(crate) struct ScopeState {
    spawner: Box<dyn Spawner + Send + Sync>,
    inner: Mutex<Inner>,
    /// Signalled when `jobs` becomes empty.
    idle: Condvar,
    /// The scope's own counts of its jobs' events (beside the process-wide ones).
    counters: Counters,
}

// Every change to a scope's state is made under its lock, by code of this crate that does not
// panic there; the spawner (user code) runs with no lock held and a panic in it is contained
// and reported as a `SpawnError` (lib.rs, "Where a panic goes"). A panic leaves nothing
// half-changed, so the scope and its futures may cross `catch_unwind`.
impl std::panic::UnwindSafe for ScopeState {}
impl std::panic::RefUnwindSafe for ScopeState {}

struct Inner {
    jobs: HashMap<JobId, Entry>,
    /// The token every job spawned now is a child of (invariant 2).
    generation: CancelSource,
    /// What the scope takes (see the module docs).
    lifecycle: Lifecycle,
    /// The outer token (`child_of`), of which every generation is a child (invariant 2), and
    /// the callback that moves the lifecycle to `OuterCancelled`.
    outer: Option<(CancelToken, CallbackGuard)>,
    holding_slot: usize,
    max_running: Option<NonZeroUsize>,
    pending: WaitQueue<(JobId, Runnable)>,
    /// A thread is handing pending runnables out; others leave it to that thread (see the
    /// module docs: a mutual exclusion, not a state).
    dispatching: bool,
    next_waker: u64,
    idle_wakers: BTreeMap<u64, Waker>,
}

impl Inner {
    /// A fresh generation: a child of the outer token, if there is one (invariant 2).
    fn next_generation(&self) -> CancelSource {
        match &self.outer {
            Some((outer, _)) => outer.child(),
            None => CancelSource::new(),
        }
    }
}

/// What the scope takes (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Lifecycle {
    Open,
    OuterCancelled,
    Closed,
}

struct Entry {
    job: Arc<dyn JobControl>,
    holds_slot: bool,
    /// Its key in `pending` while it waits for a slot.
    pending: Option<u64>,
}

impl NativeScope {
    /// A scope whose jobs run on [`ThreadSpawner`] threads.
    pub fn new() -> Self {
        NativeScope::with_spawner(ThreadSpawner::new())
    }

    /// A scope whose jobs run through `spawner` (e.g. a runtime adapter's spawner).
    ///
    /// ```
    /// use tethered::{NativeScope, ThreadSpawner};
    /// let scope = NativeScope::with_spawner(ThreadSpawner::new().name("worker"));
    /// let job = scope.spawn(|_| std::thread::current().name().map(str::to_owned))?;
    /// assert_eq!(job.join_blocking()?.as_deref(), Some("worker"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_spawner<S>(spawner: S) -> Self
    where
        S: Spawner + Send + Sync + 'static,
    {
        NativeScope {
            state: Arc::new(ScopeState {
                spawner: Box::new(spawner),
                inner: Mutex::new(Inner {
                    jobs: HashMap::new(),
                    generation: CancelSource::new(),
                    lifecycle: Lifecycle::Open,
                    outer: None,
                    holding_slot: 0,
                    max_running: None,
                    pending: WaitQueue::new(),
                    dispatching: false,
                    next_waker: 0,
                    idle_wakers: BTreeMap::new(),
                }),
                idle: Condvar::new(),
                counters: Counters::new(),
            }),
        }
    }

    /// Bounds how many jobs of the scope run at once. A job takes a slot when it is handed to
    /// the spawner and frees it only when its closure has really returned, so a cancelled job
    /// that is slow to stop still holds its slot (as trio's `CapacityLimiter` does for
    /// threads). Jobs beyond the limit wait in the scope, in order; a waiting job that is
    /// cancelled is dropped from the queue at once, its closure never run.
    ///
    /// Every limit in the crates of this family is a `NonZero` integer: a limit of zero, which
    /// would let nothing run, cannot be written. Two kinds of work that must not starve each
    /// other get a scope each, each with its own limit.
    ///
    /// ```
    /// use std::num::NonZeroUsize;
    /// use tethered::NativeScope;
    ///
    /// let scope = NativeScope::new().with_max_running(NonZeroUsize::new(2).unwrap());
    /// let jobs: Vec<_> = (0..5).map(|i| scope.spawn(move |_| i * 10)).collect::<Result<_, _>>()?;
    /// let results: Vec<_> = jobs.into_iter().map(|job| job.join_blocking().unwrap()).collect();
    /// assert_eq!(results, [0, 10, 20, 30, 40]);
    /// # Ok::<(), tethered::SpawnError>(())
    /// ```
    ///
    /// A zero limit does not compile:
    ///
    /// ```compile_fail
    /// let scope = tethered::NativeScope::new().with_max_running(0);
    /// ```
    pub fn with_max_running(self, max: NonZeroUsize) -> Self {
        sync::lock(&self.state.inner).max_running = Some(max);
        self.state.drain();
        self
    }

    /// The limit set with [`with_max_running`](Self::with_max_running), if any.
    pub fn max_running(&self) -> Option<NonZeroUsize> {
        sync::lock(&self.state.inner).max_running
    }

    /// Ties the scope to an outer token: when `parent` is cancelled, every job of the scope is
    /// cancelled with its reason, and jobs spawned afterwards start cancelled (they never run).
    /// The scope stays open; cancelling the scope never touches `parent`.
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource, NativeError, NativeScope};
    ///
    /// let server = CancelSource::new();
    /// let requests = NativeScope::new().child_of(&server.token());
    /// let job = requests.spawn(|token| token.wait())?;
    /// server.cancel(CancelReason::Shutdown);
    /// let stopped = job.join_blocking().unwrap_err();
    /// assert_eq!(stopped.cancel_reason(), Some(CancelReason::Shutdown));
    /// let late = requests.spawn(|_| unreachable!("the scope's outer token is cancelled"))?;
    /// assert!(matches!(late.join_blocking(), Err(NativeError::Cancelled { reason: CancelReason::Shutdown, .. })));
    /// # Ok::<(), tethered::SpawnError>(())
    /// ```
    pub fn child_of(self, parent: &CancelToken) -> Self {
        let scope = Arc::downgrade(&self.state);
        // Registered with no lock of the scope held: on a cancelled `parent` it runs inline.
        let weak_parent = parent.state.downgrade();
        let link = parent.on_cancel(move |reason| {
            if let Some(scope) = scope.upgrade() {
                let cause = weak_parent.upgrade().and_then(|parent| parent.cause());
                scope.outer_cancelled(reason, cause);
            }
        });
        let mut inner = sync::lock(&self.state.inner);
        let replaced = inner.outer.replace((parent.clone(), link));
        // From now on every generation is a child of `parent` (invariant 2). A job spawned
        // before this call keeps its generation, which the callback above cancels.
        let old = std::mem::replace(&mut inner.generation, parent.child());
        drop(inner);
        drop((replaced, old));
        self
    }
    /// The scope's unfinished jobs: waiting for a slot, queued in the spawner, or running
    /// (including stragglers left running by a shutdown).
    pub fn len(&self) -> usize {
        sync::lock(&self.state.inner).jobs.len()
    }

    /// Whether the scope has no unfinished job.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the scope was shut down (or is being dropped) and takes no new jobs.
    pub fn is_closed(&self) -> bool {
        sync::lock(&self.state.inner).lifecycle == Lifecycle::Closed
    }

    /// The scope's own counts: its jobs running, idle, queued (in the spawner or waiting for a
    /// slot), detached, and ever spawned, cancelled and panicked, as [`stats()`](crate::stats)
    /// counts them for the whole process. So a test or a library can assert on its own jobs
    /// while others run.
    ///
    /// ```
    /// use tethered::NativeScope;
    ///
    /// let scope = NativeScope::new();
    /// scope.spawn(|_| ())?.join_blocking()?;
    /// let mine = scope.stats();
    /// assert_eq!((mine.spawned, mine.running, mine.queued), (1, 0, 0));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> ScopeStats {
        self.state.counters.scope_snapshot()
    }

    /// Cancels every unfinished job of the scope with `reason`. The scope stays open.
    ///
    /// ```
    /// use tethered::{CancelReason, NativeScope};
    /// let scope = NativeScope::new();
    /// let job = scope.spawn(|token| token.wait())?;
    /// scope.cancel_all(CancelReason::Requested);
    /// // Stopped, started or not: `returned` holds what the closure returned, if it ran.
    /// let stopped = job.join_blocking().unwrap_err();
    /// assert_eq!(stopped.cancel_reason(), Some(CancelReason::Requested));
    /// # Ok::<(), tethered::SpawnError>(())
    /// ```
    pub fn cancel_all(&self, reason: CancelReason) {
        self.state.cancel_all(reason, None);
    }

    /// [`cancel_all`](Self::cancel_all) with a cause every job's token reads.
    pub fn cancel_all_with_cause(&self, reason: CancelReason, cause: impl Into<crate::Cause>) {
        self.state.cancel_all(reason, Some(cause.into()));
    }

    /// Cancels every job with [`CancelReason::Shutdown`] now, closes the scope to new jobs,
    /// and returns a future that resolves once every closure has returned or `grace` has
    /// passed, to a [`ShutdownReport`]. Jobs still running at the deadline are the report's
    /// stragglers and count as detached in [`stats()`](crate::stats) from then on.
    ///
    /// Works on any executor: the deadline is kept by a timer thread of this crate.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tethered::NativeScope;
    ///
    /// let scope = NativeScope::new();
    /// scope.spawn(|token| token.wait())?.detach();
    /// let report = futures_executor::block_on(scope.shutdown(Duration::from_secs(10)));
    /// assert!(report.is_clean(), "{report}");
    /// # Ok::<(), tethered::SpawnError>(())
    /// ```
    pub fn shutdown(&self, grace: Duration) -> ScopeShutdown {
        let started = Instant::now();
        let cancelled = self.state.close_and_cancel();
        ScopeShutdown::new(
            self.state.clone(),
            started,
            grace,
            cancelled,
            self.wait_idle(),
        )
    }

    /// The blocking twin of [`shutdown`](Self::shutdown), for synchronous callers.
    pub fn shutdown_blocking(&self, grace: Duration) -> ShutdownReport {
        let started = Instant::now();
        let cancelled = self.state.close_and_cancel();
        let deadline = started.checked_add(grace);
        let mut inner = sync::lock(&self.state.inner);
        while !inner.jobs.is_empty() {
            let left = match deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                // A grace too long for an `Instant`: re-checked once a day, forever.
                None => Duration::from_secs(60 * 60 * 24),
            };
            if left.is_zero() {
                break;
            }
            inner = sync::wait_timeout(&self.state.idle, inner, left);
        }
        drop(inner);
        self.state.report(started, grace, cancelled)
    }

    /// A future that resolves when the scope has no unfinished job.
    ///
    /// ```
    /// use tethered::NativeScope;
    /// let scope = NativeScope::new();
    /// scope.spawn(|_| ())?.detach();
    /// futures_executor::block_on(scope.wait_idle());
    /// assert!(scope.is_empty());
    /// # Ok::<(), tethered::SpawnError>(())
    /// ```
    pub fn wait_idle(&self) -> WaitIdle {
        WaitIdle::new(self.state.clone())
    }
}

/// The scope's [`shutdown`](NativeScope::shutdown), boxed, for a server that shuts it down
/// with its other parts.
impl crate::shutdown::Shutdown for NativeScope {
    fn shutdown(&self, grace: Duration) -> crate::shutdown::ShutdownFuture {
        Box::pin(NativeScope::shutdown(self, grace))
    }
}

impl Default for NativeScope {
    fn default() -> Self {
        NativeScope::new()
    }
}

impl Drop for NativeScope {
    fn drop(&mut self) {
        self.state.close_and_cancel();
    }
}

impl fmt::Debug for NativeScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = sync::lock(&self.state.inner);
        f.debug_struct("NativeScope")
            .field("jobs", &inner.jobs.len())
            .field("waiting_for_a_slot", &inner.pending.len())
            .field("max_running", &inner.max_running)
            .field("lifecycle", &inner.lifecycle)
            .finish()
    }
}
