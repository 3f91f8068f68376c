//! [`NativeScope`]: a group of native jobs that is cancelled, counted, bounded and shut down
//! together.
//!
//! # Invariants
//!
//! 1. `jobs` holds exactly the scope's unfinished jobs: a job is inserted when it is spawned
//!    in the scope and removed by its `job_finished` notification, which every job sends
//!    exactly once (after its closure returned, was skipped, or was dropped unrun, and before
//!    its result is published, so a joined job is never still counted here).
//! 2. Every job of the scope runs on a child token of `generation`, so `cancel_all` is one
//!    cancel of the tree (a walk with a loop, no scan of `jobs`): it swaps in a fresh
//!    generation for later jobs and cancels the old one. Once an outer token (`child_of`) is
//!    cancelled, the generation stays cancelled: jobs spawned later start cancelled.
//! 3. `holding_slot` is the number of entries of `jobs` with `holds_slot` set: jobs handed to
//!    the spawner (or run inline) and not finished. A job's slot is freed only when it
//!    finishes, that is when its closure has really returned: a cancelled job that ignores its
//!    token keeps its slot.
//! 4. `pending` holds the runnables of the jobs in `jobs` that wait for a slot, keyed by arrival
//!    (oldest first), and such a job's entry names its key. A waiting job that is cancelled
//!    finishes at once (its own cancel callback skips it), and its `job_finished` removes it
//!    from `pending` by key in O(1) (`queue.rs`): no scan, so cancelling n waiting jobs costs
//!    O(n).
//! 5. Once `closed`, nothing is added to `jobs`.
//! 6. No user code (spawner, runnable, closure drop, waker) runs while `inner` is locked; the
//!    scope's lock and a job's lock are never held together, and no token's lock is taken
//!    while `inner` is held.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::callback::CallbackGuard;
use crate::contain::drop_contained;
use crate::error::SpawnError;
use crate::idle::WaitIdle;
use crate::job::{FinishObserver, JobControl, JobOptions};
use crate::native::AbortableNative;
use crate::queue::WaitQueue;
use crate::reason::CancelReason;
use crate::report::{ShutdownReport, Straggler};
use crate::shutdown::ScopeShutdown;
use crate::source::CancelSource;
use crate::spawner::{Runnable, Spawner, ThreadSpawner, submit};
use crate::stats::{Counters, NativeStats};
use crate::sync::{self, Arc, Condvar, Mutex};
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
/// for i in 0..4 {
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
    state: Arc<ScopeState>,
}

pub(crate) struct ScopeState {
    spawner: Box<dyn Spawner + Send + Sync>,
    inner: Mutex<Inner>,
    /// Signalled when `jobs` becomes empty.
    idle: Condvar,
    /// The scope's own counts of its jobs' events (beside the process-wide ones).
    counters: Counters,
}

struct Inner {
    jobs: HashMap<u64, Entry>,
    /// The token every job spawned now is a child of (invariant 2).
    generation: CancelSource,
    /// An outer token cancelled the scope: the generation stays cancelled.
    outer_cancelled: bool,
    /// The link to an outer token (`child_of`).
    outer: Option<CallbackGuard>,
    holding_slot: usize,
    max_running: Option<usize>,
    pending: WaitQueue<(u64, Runnable)>,
    closed: bool,
    /// A thread is handing pending runnables out; others leave it to that thread.
    draining: bool,
    next_waker: u64,
    idle_wakers: BTreeMap<u64, Waker>,
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
                    outer_cancelled: false,
                    outer: None,
                    holding_slot: 0,
                    max_running: None,
                    pending: WaitQueue::new(),
                    closed: false,
                    draining: false,
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
    /// # Panics
    ///
    /// If `max` is 0: no job could ever run.
    ///
    /// ```
    /// use tethered::NativeScope;
    /// let scope = NativeScope::new().with_max_running(2);
    /// let jobs: Vec<_> = (0..5).map(|i| scope.spawn(move |_| i * 10)).collect::<Result<_, _>>()?;
    /// let results: Vec<_> = jobs.into_iter().map(|job| job.join_blocking().unwrap()).collect();
    /// assert_eq!(results, [0, 10, 20, 30, 40]);
    /// # Ok::<(), tethered::SpawnError>(())
    /// ```
    pub fn with_max_running(self, max: usize) -> Self {
        assert!(
            max > 0,
            "NativeScope::with_max_running: the limit must be at least 1"
        );
        sync::lock(&self.state.inner).max_running = Some(max);
        self.state.drain();
        self
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
    /// assert_eq!(stopped.cancel_reason(), Some(&CancelReason::Shutdown));
    /// let late = requests.spawn(|_| unreachable!("the scope's outer token is cancelled"))?;
    /// assert!(matches!(late.join_blocking(), Err(NativeError::Cancelled { reason: CancelReason::Shutdown, .. })));
    /// # Ok::<(), tethered::SpawnError>(())
    /// ```
    pub fn child_of(self, parent: &CancelToken) -> Self {
        let scope = Arc::downgrade(&self.state);
        // Registered with no lock of the scope held: on a cancelled `parent` it runs inline.
        let link = parent.on_cancel(move |reason| {
            if let Some(scope) = scope.upgrade() {
                scope.outer_cancelled(reason);
            }
        });
        let replaced = sync::lock(&self.state.inner).outer.replace(link);
        drop(replaced);
        self
    }

    /// Starts `f` in the scope, on the scope's spawner: the way a server runs its native jobs
    /// (one scope for the server, bounded with [`with_max_running`](Self::with_max_running),
    /// cancelled and shut down as one).
    ///
    /// # Errors
    ///
    /// [`SpawnError::ScopeClosed`] once the scope is shut down, or the spawner's refusal. Use
    /// [`Builder::spawn_in`](crate::Builder::spawn_in) for a named job, one with an abandon
    /// policy or one tied to a request's token as well.
    pub fn spawn<T, F>(&self, f: F) -> Result<AbortableNative<T>, SpawnError>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        self.spawn_with(None, JobOptions::default(), f)
    }

    pub(crate) fn spawn_with<T, F>(
        &self,
        parent: Option<&CancelToken>,
        options: JobOptions,
        f: F,
    ) -> Result<AbortableNative<T>, SpawnError>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        let generation = sync::lock(&self.state.inner).generation.token();
        let observer: Arc<dyn FinishObserver> = self.state.clone();
        let (job, runnable) =
            AbortableNative::prepare(Some(&generation), options, Some(observer), f);
        drop(generation);
        if let Some(parent) = parent {
            // A second parent, besides the scope's: linked by a callback that the job drops
            // when it finishes.
            let source = job.source().clone();
            let link = parent.on_cancel(move |reason| {
                source.cancel(reason.clone());
            });
            job.keep_guard(link);
            // The second parent's deadline, as of now, is the job's too.
            if let Some(deadline) = parent.deadline() {
                job.source().state.record_deadline(deadline);
            }
        }
        let id = job.id();
        let submit_now = {
            let mut inner = sync::lock(&self.state.inner);
            if inner.closed {
                drop(inner);
                // Dropping the runnable finishes the job unrun; the scope never saw it.
                drop(runnable);
                return Err(SpawnError::ScopeClosed);
            }
            let holds_slot = inner.has_free_slot();
            let control: Arc<dyn JobControl> = job.clone();
            let (pending, submit_now) = if holds_slot {
                inner.holding_slot += 1;
                (None, Some(runnable))
            } else {
                (Some(inner.pending.push_back((id, runnable))), None)
            };
            inner.jobs.insert(
                id,
                Entry {
                    job: control,
                    holds_slot,
                    pending,
                },
            );
            submit_now
        };
        if let Some(runnable) = submit_now {
            if let Err(err) = submit(&*self.state.spawner, runnable) {
                // Refused: the job finishes unrun at once (and leaves the scope), so a spawner
                // that returned `Err` but kept the task only finds it finished.
                job.source().cancel(CancelReason::Shutdown);
                job.finish_if_queued();
                return Err(err);
            }
        }
        let handle = AbortableNative::accepted(job.clone(), &*self.state.spawner)?;
        // A cancel that came before the job was accepted (while it was being handed out)
        // left a waiting job in place: it leaves now, rather than when a slot frees.
        if job.source().is_cancelled() {
            job.finish_if_queued();
        }
        Ok(handle)
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
        sync::lock(&self.state.inner).closed
    }

    /// The scope's own counts: its jobs running, queued (in the spawner or waiting for a
    /// slot), detached, and ever spawned, cancelled and panicked, as [`stats()`](crate::stats)
    /// counts them for the whole process. So a test or a library can assert on its own jobs
    /// while others run. (The containment counters, `callback_panics`, `drop_panics` and
    /// `leaked_payloads`, are process-wide only and read 0 here.)
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
    pub fn stats(&self) -> NativeStats {
        self.state.counters.snapshot()
    }

    /// Cancels every unfinished job of the scope with `reason`. The scope stays open.
    ///
    /// ```
    /// use tethered::{CancelReason, NativeScope};
    /// let scope = NativeScope::new();
    /// let job = scope.spawn(|token| token.wait())?;
    /// scope.cancel_all(CancelReason::custom("config reloaded"));
    /// // Stopped, started or not: `returned` holds what the closure returned, if it ran.
    /// let stopped = job.join_blocking().unwrap_err();
    /// assert_eq!(stopped.cancel_reason(), Some(&CancelReason::custom("config reloaded")));
    /// # Ok::<(), tethered::SpawnError>(())
    /// ```
    pub fn cancel_all(&self, reason: CancelReason) {
        self.state.cancel_all(reason);
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
            .field("closed", &inner.closed)
            .finish()
    }
}

impl Inner {
    fn has_free_slot(&self) -> bool {
        self.max_running.is_none_or(|max| self.holding_slot < max)
    }

    fn take_idle_wakers(&mut self) -> Vec<Waker> {
        if self.jobs.is_empty() {
            std::mem::take(&mut self.idle_wakers)
                .into_values()
                .collect()
        } else {
            Vec::new()
        }
    }
}

impl ScopeState {
    fn close_and_cancel(&self) -> usize {
        let count = {
            let mut inner = sync::lock(&self.inner);
            inner.closed = true;
            inner.jobs.len()
        };
        self.cancel_all(CancelReason::Shutdown);
        count
    }

    /// One cancel of the current generation (invariant 2); later jobs get a fresh one.
    fn cancel_all(&self, reason: CancelReason) {
        let generation = {
            let mut inner = sync::lock(&self.inner);
            if inner.outer_cancelled {
                inner.generation.clone()
            } else {
                std::mem::take(&mut inner.generation)
            }
        };
        generation.cancel(reason);
        drop(generation);
        self.drain();
    }

    /// The outer token was cancelled: so is every job, now and later (invariant 2).
    fn outer_cancelled(&self, reason: &CancelReason) {
        let generation = {
            let mut inner = sync::lock(&self.inner);
            inner.outer_cancelled = true;
            inner.generation.clone()
        };
        generation.cancel(reason.clone());
        drop(generation);
        self.drain();
    }

    /// Hands waiting runnables to the spawner while slots are free, oldest first.
    pub(crate) fn drain(&self) {
        loop {
            let runnable = {
                let mut inner = sync::lock(&self.inner);
                if inner.draining || !inner.has_free_slot() {
                    return;
                }
                let Some((id, runnable)) = inner.pending.pop_front() else {
                    return;
                };
                if let Some(entry) = inner.jobs.get_mut(&id) {
                    entry.pending = None;
                    entry.holds_slot = true;
                    inner.holding_slot += 1;
                }
                inner.draining = true;
                runnable
            };
            // A refusal (or a spawner's panic) dropped the runnable: its job finished with
            // `Cancelled(Shutdown)`, which its handle reports, and freed its slot.
            let _ = submit(&*self.spawner, runnable);
            sync::lock(&self.inner).draining = false;
        }
    }

    pub(crate) fn report(
        &self,
        started: Instant,
        grace: Duration,
        cancelled: usize,
    ) -> ShutdownReport {
        let mut left: Vec<Arc<dyn JobControl>> = sync::lock(&self.inner)
            .jobs
            .values()
            .map(|entry| entry.job.clone())
            .collect();
        // In spawn order, as a reader of the report expects.
        left.sort_by_key(|job| job.id());
        let mut stragglers = Vec::new();
        for job in left {
            if job.mark_detached() {
                stragglers.push(Straggler {
                    id: job.id(),
                    name: job.name().map(Arc::from),
                });
            }
        }
        ShutdownReport {
            cancelled,
            returned: cancelled.saturating_sub(stragglers.len()),
            stragglers,
            grace,
            elapsed: started.elapsed(),
        }
    }

    /// For [`WaitIdle`]: `true` if the scope is idle (and forgets `key`'s waker); otherwise
    /// stores `waker` under `key` to be woken when it becomes idle.
    pub(crate) fn poll_idle(&self, key: &mut Option<u64>, waker: &Waker) -> bool {
        let mut inner = sync::lock(&self.inner);
        if inner.jobs.is_empty() {
            let old = key.take().and_then(|key| inner.idle_wakers.remove(&key));
            drop(inner);
            drop_contained(old);
            return true;
        }
        let key = *key.get_or_insert_with(|| {
            inner.next_waker += 1;
            inner.next_waker
        });
        let replaced = inner.idle_wakers.insert(key, waker.clone());
        drop(inner);
        // A waker's drop is foreign code: never under the scope's lock (invariant 6).
        drop_contained(replaced);
        false
    }

    /// Forgets the idle waker under `key` (its `WaitIdle` was dropped).
    pub(crate) fn forget_idle_waker(&self, key: u64) {
        let waker = sync::lock(&self.inner).idle_wakers.remove(&key);
        drop_contained(waker);
    }
}

impl FinishObserver for ScopeState {
    fn job_finished(&self, id: u64) {
        let (wakers, unrun) = {
            let mut inner = sync::lock(&self.inner);
            let mut unrun = None;
            if let Some(entry) = inner.jobs.remove(&id) {
                if entry.holds_slot {
                    inner.holding_slot -= 1;
                }
                // A waiting job that finished (cancelled): its runnable leaves by key.
                if let Some(key) = entry.pending {
                    unrun = inner.pending.remove(key);
                }
            }
            let wakers = inner.take_idle_wakers();
            if inner.jobs.is_empty() {
                self.idle.notify_all();
            }
            (wakers, unrun)
        };
        // Its job has finished: dropping the runnable does nothing but let go of the job.
        drop(unrun);
        for waker in wakers {
            crate::contain::run_contained(|| waker.wake());
        }
        self.drain();
    }

    fn counters(&self) -> &Counters {
        &self.counters
    }
}
