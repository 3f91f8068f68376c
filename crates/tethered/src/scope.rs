//! [`NativeScope`]: a group of native jobs that is cancelled, counted, bounded and shut down
//! together.
//!
//! # Invariants
//!
//! 1. `jobs` holds exactly the scope's unfinished jobs: a job is inserted when it is spawned
//!    in the scope and removed by its `job_finished` notification, which every job sends
//!    exactly once (after its closure returned, was skipped, or was dropped unrun).
//! 2. `holding_slot` is the number of entries of `jobs` with `holds_slot` set: jobs handed to
//!    the spawner (or run inline) and not finished. A job's slot is freed only when it
//!    finishes, that is when its closure has really returned: a cancelled job that ignores its
//!    token keeps its slot.
//! 3. `pending` holds the tasks of the jobs in `jobs` without a slot, oldest first. A
//!    cancelled pending task needs no slot: it is run inline at once (which only skips its
//!    closure), so a cancel never waits for a slot.
//! 4. Once `closed`, nothing is added to `jobs`.
//! 5. No user code (spawner, task, closure drop, waker) runs while `inner` is locked; the
//!    scope's lock and a job's lock are never held together.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use crate::contain::drop_contained;
use crate::error::SpawnError;
use crate::job::{FinishObserver, JobControl, JobOptions};
use crate::native::AbortableNative;
use crate::reason::CancelReason;
use crate::spawner::{Runnable, Spawner, ThreadSpawner, submit};
use crate::sync::{self, Arc, Condvar, DataMutex, Mutex};
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

struct ScopeState {
    spawner: Box<dyn Spawner + Send + Sync>,
    inner: Mutex<Inner>,
    /// Signalled when `jobs` becomes empty.
    idle: Condvar,
}

struct Inner {
    jobs: BTreeMap<u64, Entry>,
    holding_slot: usize,
    max_running: Option<usize>,
    pending: VecDeque<(u64, Runnable)>,
    closed: bool,
    /// A thread is handing pending tasks out; others leave it to that thread.
    draining: bool,
    next_waker: u64,
    idle_wakers: BTreeMap<u64, Waker>,
}

struct Entry {
    job: Arc<dyn JobControl>,
    holds_slot: bool,
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
                    jobs: BTreeMap::new(),
                    holding_slot: 0,
                    max_running: None,
                    pending: VecDeque::new(),
                    closed: false,
                    draining: false,
                    next_waker: 0,
                    idle_wakers: BTreeMap::new(),
                }),
                idle: Condvar::new(),
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

    /// Spawns `f` in the scope.
    ///
    /// Fails with [`SpawnError::ScopeClosed`] once the scope is shut down, or with the
    /// spawner's error. Use [`Builder::spawn_in`](crate::Builder::spawn_in) for a named job
    /// or one with an abandon policy.
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
        let observer: Arc<dyn FinishObserver> = self.state.clone();
        let (job, task) = AbortableNative::prepare(parent, options, Some(observer), f);
        let id = job.id();
        let submit_now = {
            let mut inner = sync::lock(&self.state.inner);
            if inner.closed {
                drop(inner);
                // Dropping the task finishes the job unrun; the scope never saw it.
                drop(task);
                return Err(SpawnError::ScopeClosed);
            }
            let holds_slot = inner.has_free_slot();
            let control: Arc<dyn JobControl> = job.clone();
            inner.jobs.insert(
                id,
                Entry {
                    job: control,
                    holds_slot,
                },
            );
            if holds_slot {
                inner.holding_slot += 1;
                Some(task)
            } else {
                inner.pending.push_back((id, task));
                None
            }
        };
        match submit_now {
            Some(task) => submit(&*self.state.spawner, task)?,
            None => {
                // A waiting job that is cancelled leaves the queue at once (invariant 3).
                let scope = Arc::downgrade(&self.state);
                let guard = job.source().token().on_cancel(move |_| {
                    if let Some(scope) = scope.upgrade() {
                        scope.drain();
                    }
                });
                job.keep_guard(guard);
            }
        }
        AbortableNative::accepted(job, &*self.state.spawner)
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

    /// Cancels every unfinished job of the scope with `reason`. The scope stays open.
    ///
    /// ```
    /// use tethered::{CancelReason, NativeScope};
    /// let scope = NativeScope::new();
    /// let job = scope.spawn(|token| token.wait())?;
    /// scope.cancel_all(CancelReason::custom("config reloaded"));
    /// match job.join_blocking() {
    ///     Ok(reason) => assert_eq!(reason, CancelReason::custom("config reloaded")),
    ///     Err(err) => assert!(err.is_cancelled()), // cancelled before it started
    /// }
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
        ScopeShutdown {
            state: self.state.clone(),
            started,
            deadline: started.checked_add(grace),
            grace,
            cancelled,
            idle: Some(self.wait_idle()),
            timer_waker: None,
            timer: None,
        }
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
        WaitIdle {
            state: self.state.clone(),
            key: None,
        }
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

    /// The wakers to wake if the scope just became idle.
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
    /// Closes the scope and cancels every job; returns how many were unfinished.
    fn close_and_cancel(&self) -> usize {
        let count = {
            let mut inner = sync::lock(&self.inner);
            inner.closed = true;
            inner.jobs.len()
        };
        self.cancel_all(CancelReason::Shutdown);
        count
    }

    fn cancel_all(&self, reason: CancelReason) {
        let jobs: Vec<Arc<dyn JobControl>> = sync::lock(&self.inner)
            .jobs
            .values()
            .map(|entry| entry.job.clone())
            .collect();
        for job in &jobs {
            job.source().cancel(reason.clone());
        }
        // Jobs whose closure has not started (queued in the spawner, or waiting here for a
        // slot) finish now instead of when a thread reaches them.
        for job in &jobs {
            job.finish_if_queued();
        }
        drop(jobs);
        self.drain();
    }

    /// Hands waiting tasks out: cancelled ones are run inline (they only skip their closure),
    /// the others go to the spawner while slots are free. One thread drains at a time; a
    /// finish that happens meanwhile is picked up by that thread's next round.
    fn drain(&self) {
        loop {
            let task = {
                let mut inner = sync::lock(&self.inner);
                if inner.draining {
                    return;
                }
                let index = match inner
                    .pending
                    .iter()
                    .position(|(_, task)| task.is_cancelled())
                {
                    Some(index) => index,
                    None if inner.has_free_slot() && !inner.pending.is_empty() => 0,
                    None => return,
                };
                let Some((id, task)) = inner.pending.remove(index) else {
                    return;
                };
                // A job that finished while it waited here (cancelled through its handle) has
                // left `jobs`; its task only has nothing left to do, and takes no slot.
                if let Some(entry) = inner.jobs.get_mut(&id) {
                    entry.holds_slot = true;
                    inner.holding_slot += 1;
                }
                inner.draining = true;
                task
            };
            if let Err(_refused) = submit(&*self.spawner, task) {
                // The spawner dropped the task: its job finished with `Cancelled(Shutdown)`,
                // which is what its handle reports.
            }
            sync::lock(&self.inner).draining = false;
        }
    }

    /// Builds the report of a shutdown and marks the stragglers detached.
    fn report(&self, started: Instant, grace: Duration, cancelled: usize) -> ShutdownReport {
        let left: Vec<Arc<dyn JobControl>> = sync::lock(&self.inner)
            .jobs
            .values()
            .map(|entry| entry.job.clone())
            .collect();
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
}

impl FinishObserver for ScopeState {
    fn job_finished(&self, id: u64) {
        let wakers = {
            let mut inner = sync::lock(&self.inner);
            if let Some(entry) = inner.jobs.remove(&id) {
                if entry.holds_slot {
                    inner.holding_slot -= 1;
                }
            }
            let wakers = inner.take_idle_wakers();
            if inner.jobs.is_empty() {
                self.idle.notify_all();
            }
            wakers
        };
        for waker in wakers {
            waker.wake();
        }
        self.drain();
    }
}

/// The outcome of [`NativeScope::shutdown`]: how many jobs returned within the grace period,
/// and which did not.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Jobs that were unfinished when the shutdown began (all were cancelled).
    pub cancelled: usize,
    /// Of those, jobs whose closure returned (or was skipped) within the grace period.
    pub returned: usize,
    /// Jobs still running at the deadline. They run on, counted in
    /// [`stats()`](crate::stats)`.detached` and in [`NativeScope::len`] until they return.
    pub stragglers: Vec<Straggler>,
    /// The grace period.
    pub grace: Duration,
    /// How long the shutdown took.
    pub elapsed: Duration,
}

impl ShutdownReport {
    /// Whether every job returned in time.
    pub fn is_clean(&self) -> bool {
        self.stragglers.is_empty()
    }
}

impl fmt::Display for ShutdownReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} job(s) cancelled, {} returned in {:.1?} (grace {:?})",
            self.cancelled, self.returned, self.elapsed, self.grace
        )?;
        if !self.stragglers.is_empty() {
            write!(
                f,
                "; {} still running, now detached:",
                self.stragglers.len()
            )?;
            for straggler in &self.stragglers {
                write!(f, " {straggler}")?;
            }
        }
        Ok(())
    }
}

/// A job that was still running when a scope's shutdown grace ran out.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Straggler {
    /// The job's process-wide id.
    pub id: u64,
    /// The job's name, if it was given one.
    pub name: Option<Arc<str>>,
}

impl fmt::Display for Straggler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "#{} \"{name}\"", self.id),
            None => write!(f, "#{}", self.id),
        }
    }
}

/// Resolves to the [`ShutdownReport`]; made by [`NativeScope::shutdown`].
#[must_use = "the jobs are cancelled already; await this to wait for them and get the report"]
pub struct ScopeShutdown {
    state: Arc<ScopeState>,
    started: Instant,
    deadline: Option<Instant>,
    grace: Duration,
    cancelled: usize,
    /// Waits for the scope to become idle; `None` once the shutdown completed.
    idle: Option<WaitIdle>,
    /// The waker the deadline timer wakes: the latest one this future was polled with (the
    /// future may move to another task between polls).
    timer_waker: Option<Arc<DataMutex<Waker>>>,
    /// The deadline's entry in the timer: dropped (removed) with the shutdown or on completion.
    timer: Option<crate::timer::TimerEntry>,
}

impl Future for ScopeShutdown {
    type Output = ShutdownReport;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ShutdownReport> {
        let this = self.get_mut();
        assert!(
            this.idle.is_some(),
            "`ScopeShutdown` polled after it completed"
        );
        let timed_out = this
            .deadline
            .is_some_and(|deadline| Instant::now() >= deadline);
        let idle = this
            .idle
            .as_mut()
            .is_some_and(|idle| Pin::new(idle).poll(cx).is_ready());
        // A deadline the timer thread cannot serve (the OS refused to start it) ends the wait
        // now: a shutdown must not wait past its grace for a wake-up that never comes.
        if !idle && !timed_out && this.arm_timer(cx.waker()).is_ok() {
            return Poll::Pending;
        }
        // Marks the shutdown completed, and deregisters its waker and its timer entry.
        this.idle = None;
        this.timer = None;
        Poll::Ready(this.state.report(this.started, this.grace, this.cancelled))
    }
}

impl ScopeShutdown {
    /// Makes sure the deadline wakes `waker`: schedules the timer on the first call, and
    /// afterwards only updates the waker it will wake.
    fn arm_timer(&mut self, waker: &Waker) -> std::io::Result<()> {
        let Some(deadline) = self.deadline else {
            return Ok(());
        };
        match &self.timer_waker {
            Some(slot) => {
                let replaced = {
                    let mut stored = sync::lock_data(slot);
                    if stored.will_wake(waker) {
                        None
                    } else {
                        Some(std::mem::replace(&mut *stored, waker.clone()))
                    }
                };
                drop_contained(replaced);
            }
            None => {
                let slot = Arc::new(DataMutex::new(waker.clone()));
                let entry = crate::timer::schedule(
                    deadline,
                    Box::new({
                        let slot = slot.clone();
                        move || {
                            let waker = sync::lock_data(&slot).clone();
                            waker.wake();
                        }
                    }),
                )?;
                self.timer_waker = Some(slot);
                self.timer = Some(entry);
            }
        }
        Ok(())
    }
}

impl fmt::Debug for ScopeShutdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScopeShutdown")
            .field("grace", &self.grace)
            .field("cancelled", &self.cancelled)
            .finish_non_exhaustive()
    }
}

/// Resolves when a scope has no unfinished job; made by [`NativeScope::wait_idle`].
#[must_use = "futures do nothing unless polled"]
pub struct WaitIdle {
    state: Arc<ScopeState>,
    key: Option<u64>,
}

impl Future for WaitIdle {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let mut inner = sync::lock(&this.state.inner);
        if inner.jobs.is_empty() {
            if let Some(key) = this.key.take() {
                let waker = inner.idle_wakers.remove(&key);
                drop(inner);
                drop(waker);
            }
            return Poll::Ready(());
        }
        let key = *this.key.get_or_insert_with(|| {
            inner.next_waker += 1;
            inner.next_waker
        });
        let replaced = inner.idle_wakers.insert(key, cx.waker().clone());
        drop(inner);
        // A waker's drop is foreign code: never under the scope's lock (invariant 5).
        drop(replaced);
        Poll::Pending
    }
}

impl Drop for WaitIdle {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            let waker = sync::lock(&self.state.inner).idle_wakers.remove(&key);
            drop(waker);
        }
    }
}

impl fmt::Debug for WaitIdle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitIdle").finish_non_exhaustive()
    }
}
