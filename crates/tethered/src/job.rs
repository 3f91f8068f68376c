//! The state machine shared by a native job's handle, its runner and its scope.
//!
//! ```text
//!            run: token not cancelled          closure returns / panics
//!  Queued ─────────────────────────▶ Running ───────────────────────────▶ Finished ──▶ Taken
//!    │  run: token already cancelled (closure dropped, never called)          ▲   (handle took
//!    ├───────────────────────────────────────────────────────────────────────┤    the result)
//!    │  runner dropped unrun (pool shut down / refused the job)               │
//!    └───────────────────────────────────────────────────────────────────────┘
//! ```
//!
//! Beside the stage, two flags: `detached` (the handle let go, or the job was abandoned or
//! left behind by a scope shutdown: the job counts in `stats().detached` until it finishes)
//! and `abandoned` (the handle stopped waiting: it resolves to `NativeError::Abandoned` while
//! the closure runs on).
//!
//! # Invariants
//!
//! 1. The closure is called at most once, and only from `Queued` with the token not cancelled
//!    at that moment; a cancel that completed before the runner started is always seen (its
//!    flag store happens before the runner's load).
//! 2. `Finished` is entered exactly once, after the closure has returned (or was never called),
//!    so a handle that observes `Finished` knows the native code is done with the job.
//! 3. The result moves out exactly once (`Finished` to `Taken`), or the handle resolves once to
//!    `Abandoned` and never looks at the result.
//! 4. No user code (the closure, its drop, a waker's wake or drop, a spawner, a scope's next
//!    job) runs while
//!    `state` is locked, and the job's lock is never held while another lock is taken.
//! 5. Counters: `queued` from creation until the closure was started (after `running` went
//!    up) or dropped unrun (after its drop returned, so whatever that drop spawned is counted
//!    first: the counts never read 0 while work is handed on); `running` from right before
//!    the closure is called until right after it returned, before `Finished` is published; `detached` from the moment `detached` is set on an unfinished job until it
//!    finishes.
//! 6. A thread blocks on `changed` only in `join_blocking`, counted in `sleepers` from the
//!    critical section in which it found the job unfinished until it holds the lock again.
//!    `finish` and `abandon` read `sleepers` in the critical section that changes what such a
//!    thread waits for and notify only if it is not zero, so a job that nobody joins blocking
//!    (every awaited job) makes no futex system call when it finishes.
//!
//! The job's state is a mutex-protected enum rather than an atomic word: it is locked twice per
//! job (start, finish) plus once per poll of the handle, never in the closure's hot loop, and
//! the lock lets the result, the waker and the stage change together.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::{Context, Poll, Waker};

use std::time::{Duration, Instant};

use crate::callback::CallbackGuard;
use crate::contain::{drop_contained, run_contained};
use crate::error::{JobPanic, NativeError, SpawnError};
use crate::reason::CancelReason;
use crate::source::CancelSource;
use crate::state::CancelHook;
use crate::stats::{self, Counters, Event};
use crate::sync::{self, Arc, Condvar, Mutex, Weak};
use crate::thread_name::ThreadName;
use crate::token::CancelToken;
use crate::trace::JobSpan;

/// What a job is told at creation besides its closure.
#[derive(Clone, Debug, Default)]
pub(crate) struct JobOptions {
    pub(crate) name: Option<Arc<str>>,
    pub(crate) abandon_after: Option<Duration>,
    /// The job's token is the child of a caller's token, so a cancel can come from outside
    /// the handle.
    pub(crate) has_parent: bool,
}

/// Told when a job finishes, from the thread that finished it, with no lock held; and counts
/// the job's events beside the process-wide counters.
pub(crate) trait FinishObserver: Send + Sync {
    fn job_finished(&self, id: u64);
    fn counters(&self) -> &Counters;
}

/// `repr(C)`, in the order a round trip touches the fields: the state's lock word and what a
/// start and a finish read and write come first, next to the `Arc`'s counts, so that the pool
/// thread and the awaiting thread pass as few cache lines between them as the layout allows.
#[repr(C)]
pub(crate) struct Job<T, F> {
    state: Mutex<State<T, F>>,
    source: CancelSource,
    observer: Option<Arc<dyn FinishObserver>>,
    /// Signalled when the job reaches `Finished` or is abandoned, if anyone sleeps on it
    /// (invariant 6).
    changed: Condvar,
    id: u64,
    options: JobOptions,
    span: JobSpan,
}

/// `repr(C)` for the same reason as [`Job`]: the fields every job's start, finish and poll
/// touch first, then the stage, then what only a cancel or an abandon touches.
#[repr(C)]
struct State<T, F> {
    /// The handle's waker, woken on `Finished` or on abandon.
    waker: Option<Waker>,
    /// Threads blocked on `changed` in `join_blocking` right now (invariant 6).
    sleepers: usize,
    /// `spawn_on` got `Ok` from the spawner and the job counts in the stats.
    accepted: bool,
    /// The runner was dropped unrun before the spawner returned: the spawner refused the job.
    rejected: bool,
    /// The finished job has been counted in `stats().cancelled` (if its token was cancelled).
    settled: bool,
    /// The job counts as detached (see the module docs).
    detached: bool,
    /// The handle is gone (dropped or detached): nobody will take the result, which is dropped
    /// (contained) as soon as it exists.
    released: bool,
    /// The cancel event was traced (by the cancel callback or, if the closure returned
    /// before that callback ran, by the return).
    cancel_traced: bool,
    /// Registrations on the job's token that serve the job only (its abandon timer, its
    /// tracing, a scope's queue): dropped when the job finishes, so a source shared by many
    /// jobs does not collect one per finished job.
    guards: Vec<CallbackGuard>,
    /// The abandon deadline's timer entry: removed from the timer when the job finishes.
    timer: Option<crate::timer::TimerEntry>,
    /// The closure until it starts, then the result. After the small fields: a closure's
    /// captures can be of any size, and placed first they would push those off the first
    /// cache lines.
    stage: Stage<T, F>,
    /// The handle gave up waiting after the abandon grace.
    abandoned: Option<Duration>,
    /// When the job's cancel callback ran, for tracing the cancel-to-return time.
    cancelled_at: Option<Instant>,
}

enum Stage<T, F> {
    Queued(F),
    Running,
    Finished(Result<T, NativeError<T>>),
    Taken,
}

impl<T, F> Stage<T, F> {
    fn is_finished(&self) -> bool {
        matches!(self, Stage::Finished(_) | Stage::Taken)
    }
}

/// The runner's view of a job, with the closure's type erased.
pub(crate) trait RunJob: Send + Sync {
    /// Runs the closure (or skips it if already cancelled) and finishes the job.
    fn run(&self);
    /// The runner was dropped without running: finish with `Cancelled(Shutdown)`.
    fn drop_unrun(&self);
    fn name(&self) -> Option<&str>;
    fn is_cancelled(&self) -> bool;
}

/// What a scope needs of a job, with its types erased.
pub(crate) trait JobControl: Send + Sync {
    fn id(&self) -> u64;
    fn name(&self) -> Option<&str>;
    fn source(&self) -> &CancelSource;
    fn is_finished(&self) -> bool;
    /// Marks an unfinished job detached (counted in `stats().detached`); `true` if it was
    /// unfinished.
    fn mark_detached(&self) -> bool;
    /// After a cancel: a job whose closure has not started finishes now, with the cancel's
    /// reason, its closure dropped unrun; the pool's later run of its task does nothing.
    fn finish_if_queued(&self);
    /// Keeps `guard` until the job finishes (drops it at once if it has).
    fn keep_guard(&self, guard: CallbackGuard);
    /// Whether a scope tracks the job.
    fn in_scope(&self) -> bool;
    /// The handle is gone: drop the result (contained) now if there is one, or as soon as it
    /// is published.
    fn release(&self);
}

/// The handle's view of a job, with the closure's type erased.
pub(crate) trait JobHandle<T>: JobControl {
    /// Called once the spawner returned `Ok`.
    fn accept(&self) -> Result<(), SpawnError>;
    /// Counts a job whose spawner refused it (it finished unrun) as spawned and cancelled,
    /// for a caller that hands out its handle anyway.
    fn accept_refused(&self);
    fn poll_result(&self, cx: &mut Context<'_>) -> Poll<Result<T, NativeError<T>>>;
    /// The same job as a [`JobControl`] (by hand: trait upcasting needs a newer Rust than the
    /// crate's `rust-version`).
    fn control(self: Arc<Self>) -> Arc<dyn JobControl>;
    fn join_blocking(&self) -> Result<T, NativeError<T>>;
}

/// Ids for jobs, unique within the process.
fn next_job_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    // ORDERING: Relaxed: only uniqueness matters, which any ordering of one RMW gives.
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl<T, F> Job<T, F>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    /// A new queued job. The caller must then hand a [`Runnable`](crate::Runnable) of it to a
    /// spawner, and call [`Job::watch`] once it is shared.
    pub(crate) fn new(
        f: F,
        source: CancelSource,
        options: JobOptions,
        observer: Option<Arc<dyn FinishObserver>>,
    ) -> Self {
        let id = next_job_id();
        stats::count(Event::Queued, observer.as_deref().map(|o| o.counters()));
        let span = JobSpan::new(id, options.name.as_deref());
        Job {
            id,
            options,
            source,
            state: Mutex::new(State {
                stage: Stage::Queued(f),
                waker: None,
                accepted: false,
                rejected: false,
                settled: false,
                detached: false,
                abandoned: None,
                released: false,
                cancelled_at: None,
                cancel_traced: false,
                sleepers: 0,
                guards: Vec::new(),
                timer: None,
            }),
            changed: Condvar::new(),
            observer,
            span,
        }
    }

    /// Registers what must happen when the job's token is cancelled: finishing a job still
    /// queued (if its source came from outside, so a cancel may not come through the handle),
    /// the abandon timer (if the job has an abandon grace) and the cancel event (with
    /// tracing). Nothing is registered otherwise, so a plain job costs no callback: its cancels
    /// come through its handle or scope, which finish a queued job themselves.
    pub(crate) fn watch(self: &Arc<Self>) {
        if !self.options.has_parent
            && self.options.abandon_after.is_none()
            && !cfg!(feature = "tracing")
        {
            return;
        }
        // A hook, not a boxed closure: no allocation of its own, and only a `Weak`, so that it
        // keeps neither the job nor its result alive.
        let hook: Weak<Self> = Arc::downgrade(self);
        let guard = self
            .source
            .token()
            .on_cancel_hook(hook as Weak<dyn CancelHook>);
        self.keep_guard(guard);
    }

    fn on_cancelled(self: Arc<Self>, reason: &CancelReason) {
        let (finished, accepted, trace) = {
            let mut state = sync::lock(&self.state);
            state.cancelled_at = Some(Instant::now());
            let finished = state.stage.is_finished();
            let trace = !finished && !state.cancel_traced;
            state.cancel_traced |= trace;
            (finished, state.accepted, trace)
        };
        if trace {
            self.span.cancelled(reason);
        }
        if finished {
            return;
        }
        // A job whose closure has not started finishes now rather than when a pool thread
        // reaches it. Only once accepted: before that, the job is still being handed out
        // (a scope has not listed it yet), and a cancelled job is then run in place anyway.
        if accepted {
            self.finish_if_queued();
        }
        if let Some(grace) = self.options.abandon_after {
            // A grace too long for an `Instant` (`Duration::MAX`) never abandons.
            let Some(deadline) = Instant::now().checked_add(grace) else {
                return;
            };
            let job = Arc::downgrade(&self);
            let entry = crate::timer::schedule(
                deadline,
                Box::new(move || {
                    if let Some(job) = job.upgrade() {
                        job.abandon(grace);
                    }
                }),
            );
            match entry {
                // Removed from the timer when the job finishes, so a job that returns early
                // keeps nothing in the timer until its deadline.
                Ok(entry) => self.keep_timer(entry),
                // No timer thread (the OS refused one): the handle waits for the closure, as
                // without an abandon policy; the failure is traced and the caller's cancel
                // still reaches the closure.
                Err(err) => self.span.timer_failed(&err),
            }
        }
    }

    /// The handle stops waiting for a cancelled job that is still running after `grace`.
    fn abandon(&self, grace: Duration) {
        let (waker, sleepers) = {
            let mut state = sync::lock(&self.state);
            if state.stage.is_finished() || state.abandoned.is_some() {
                return;
            }
            state.abandoned = Some(grace);
            if !state.detached {
                state.detached = true;
                self.count(Event::Detached);
            }
            (state.waker.take(), state.sleepers)
        };
        self.span.abandoned(grace);
        if sleepers > 0 {
            self.changed.notify_all();
        }
        if let Some(waker) = waker {
            run_contained(|| waker.wake());
        }
    }

    /// Traces the closure's return, with the time since the cancel if it was cancelled. Waiters
    /// are woken before cancel callbacks run, so a closure can return before its cancel
    /// callback ran: then the cancel is traced here, and its time counts as zero.
    #[cfg(feature = "tracing")]
    fn trace_return(&self) {
        let Some(reason) = self.source.token().reason() else {
            self.span.returned(None);
            return;
        };
        let (trace_cancel, since_cancel) = {
            let mut state = sync::lock(&self.state);
            let trace_cancel = !state.cancel_traced;
            state.cancel_traced = true;
            let since = state
                .cancelled_at
                .map(|at| at.elapsed())
                .unwrap_or_default();
            (trace_cancel, since)
        };
        if trace_cancel {
            self.span.cancelled(&reason);
        }
        self.span.returned(Some(since_cancel));
    }

    /// Takes the closure out of `Queued`, leaving `Running`; `None` if it was not queued.
    fn take_closure(&self, on_take: impl FnOnce(&mut State<T, F>)) -> Option<F> {
        let mut state = sync::lock(&self.state);
        match std::mem::replace(&mut state.stage, Stage::Running) {
            Stage::Queued(f) => {
                on_take(&mut state);
                drop(state);
                // Still counted as queued: the caller counts it dequeued once the closure was
                // started or dropped (invariant 5), so work that a closure's drop hands on (a
                // clean-up job it spawns) is counted before this job stops being counted.
                Some(f)
            }
            // A runner runs once (`Runnable::run` takes `self`), so this is unreachable;
            // leave the stage as it was rather than run anything twice.
            other => {
                state.stage = other;
                None
            }
        }
    }

    /// Publishes `result` and wakes whoever waits for it.
    ///
    /// First the job's token is sealed: from here on a cancel is a no-op that says so (returns
    /// `false`), so "finished" and "cancelled" are decided in one place, the token's flag. A
    /// value whose seal lost to a cancel is what the closure returned after that cancel: the
    /// handle gives it as `Cancelled { returned: Some(value) }`, whoever cancelled.
    fn finish(&self, result: Result<T, NativeError<T>>) {
        let sealed = self.source.state.seal();
        let result = match result {
            Ok(value) if !sealed => Err(NativeError::Cancelled {
                reason: self
                    .source
                    .state
                    .reason()
                    .unwrap_or(CancelReason::Requested),
                returned: Some(value),
            }),
            other => other,
        };
        let mut state = sync::lock(&self.state);
        // A plain job (no registrations of its own, no scope) publishes in this same critical
        // section: the pool thread wakes the handle sooner.
        if !state.guards.is_empty() || state.timer.is_some() || self.observer.is_some() {
            // Deregisters the job's own callbacks before the result is published, so whoever
            // sees the job finished also sees its registrations gone. One of them may be
            // running right now (this finish may even come from inside it): a guard dropped
            // inside its own callback returns at once, and one running elsewhere is waited
            // for, with no lock of ours held.
            let (guards, timer) = (std::mem::take(&mut state.guards), state.timer.take());
            drop(state);
            drop(guards);
            drop(timer);
            // The scope learns first, so that whoever sees the job finished (its handle
            // resolved) also sees it gone from its scope's count.
            if let Some(observer) = &self.observer {
                observer.job_finished(self.id);
            }
            state = sync::lock(&self.state);
        }
        let (waker, sleepers, late_guards, unwanted) = {
            // Moved in, so the lock is released at the end of this block.
            let mut state = state;
            let unwanted = if state.released {
                state.stage = Stage::Taken;
                Some(result)
            } else {
                state.stage = Stage::Finished(result);
                None
            };
            if state.accepted {
                settle(&mut state, &self.source, self.scope_counters());
            }
            if state.detached {
                self.count(Event::DetachedFinished);
            }
            (
                state.waker.take(),
                state.sleepers,
                std::mem::take(&mut state.guards),
                unwanted,
            )
        };
        // Nobody will take it: its drop (a panic payload's, a value's) is user code.
        drop_contained(unwanted);
        if sleepers > 0 {
            self.changed.notify_all();
        }
        if let Some(waker) = waker {
            run_contained(|| waker.wake());
        }
        // A guard kept while the first ones were being dropped.
        drop(late_guards);
    }

    /// The counters of the job's scope, if it has one.
    fn scope_counters(&self) -> Option<&Counters> {
        self.observer.as_deref().map(|o| o.counters())
    }

    /// Counts `event` process-wide and in the job's scope.
    fn count(&self, event: Event) {
        stats::count(event, self.scope_counters());
    }

    /// Keeps the abandon deadline's timer entry until the job finishes (removes it at once if
    /// the job has finished already).
    fn keep_timer(&self, entry: crate::timer::TimerEntry) {
        let mut state = sync::lock(&self.state);
        if state.stage.is_finished() {
            drop(state);
            drop(entry);
        } else {
            let old = state.timer.replace(entry);
            drop(state);
            drop(old);
        }
    }

    fn abandoned_error(&self, grace: Duration) -> NativeError<T> {
        NativeError::Abandoned {
            reason: self
                .source
                .token()
                .reason()
                .unwrap_or(CancelReason::Requested),
            grace,
        }
    }
}

impl<T: Send + 'static> Job<T, crate::completer::External<T>> {
    /// Starts an external job: its placeholder closure is dropped, and the job counts as
    /// running until [`complete`](Self::complete).
    pub(crate) fn start_external(&self) {
        if self.take_closure(|_| {}).is_some() {
            self.count(Event::Started);
            self.count(Event::Dequeued);
        }
    }

    /// Finishes an external job: with `Some(value)` as a closure's return (the seal decides
    /// whether a cancel came first), with `None` as stopped (the work was lost).
    pub(crate) fn complete(&self, value: Option<T>) {
        self.count(Event::Returned);
        match value {
            Some(value) => {
                #[cfg(feature = "tracing")]
                self.trace_return();
                self.finish(Ok(value));
            }
            None => {
                // The token's reason if it was cancelled; else the work was lost, which its
                // token hears as a shutdown.
                self.source.cancel(CancelReason::Shutdown);
                let reason = self.source.state.reason().unwrap_or(CancelReason::Shutdown);
                self.finish(Err(NativeError::cancelled(reason)));
            }
        }
    }

    pub(crate) fn token(&self) -> CancelToken {
        self.source.token()
    }

    pub(crate) fn token_is_cancelled(&self) -> bool {
        self.source.is_cancelled()
    }
}

/// Counts a finished, accepted job in `stats().cancelled` once, if its token was cancelled.
fn settle<T, F>(state: &mut State<T, F>, source: &CancelSource, scope: Option<&Counters>) {
    if !state.settled {
        state.settled = true;
        if source.is_cancelled() {
            stats::count(Event::Cancelled, scope);
        }
    }
}

impl<T, F> RunJob for Job<T, F>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    fn run(&self) {
        let Some(f) = self.take_closure(|_| {}) else {
            return;
        };
        let token = self.source.token();
        if let Some(reason) = token.reason() {
            self.span.skipped(&reason);
            drop_contained(f);
            self.count(Event::Dequeued);
            self.finish(Err(NativeError::cancelled(reason)));
            return;
        }
        self.count(Event::Started);
        self.count(Event::Dequeued);
        let outcome = self.span.in_scope(|| {
            // Named after the job while it runs, on whatever pool (restored when it returns).
            let _named = self.options.name.as_deref().map(ThreadName::set);
            catch_unwind(AssertUnwindSafe(|| f(token)))
        });
        self.count(Event::Returned);
        let result = match outcome {
            Ok(value) => {
                #[cfg(feature = "tracing")]
                self.trace_return();
                Ok(value)
            }
            Err(payload) => {
                self.count(Event::Panicked);
                let panic = JobPanic::new(payload);
                self.span.panicked(panic.message());
                Err(NativeError::Panicked(panic))
            }
        };
        self.finish(result);
    }

    fn drop_unrun(&self) {
        let Some(f) = self.take_closure(|state| state.rejected = !state.accepted) else {
            return;
        };
        // A pool that drops the job shuts down (or refused it): whoever holds the job's token
        // hears it. The token is the job's own, so a caller's token is never touched.
        self.source.cancel(CancelReason::Shutdown);
        drop_contained(f);
        self.count(Event::Dequeued);
        self.finish(Err(NativeError::cancelled(CancelReason::Shutdown)));
    }

    fn name(&self) -> Option<&str> {
        self.options.name.as_deref()
    }

    fn is_cancelled(&self) -> bool {
        self.source.is_cancelled()
    }
}

impl<T, F> CancelHook for Job<T, F>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    fn cancelled(self: Arc<Self>, reason: &CancelReason) {
        self.on_cancelled(reason);
    }
}

impl<T, F> JobControl for Job<T, F>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    fn id(&self) -> u64 {
        self.id
    }

    fn name(&self) -> Option<&str> {
        self.options.name.as_deref()
    }

    fn source(&self) -> &CancelSource {
        &self.source
    }

    fn is_finished(&self) -> bool {
        sync::lock(&self.state).stage.is_finished()
    }

    fn finish_if_queued(&self) {
        let Some(f) = self.take_closure(|_| {}) else {
            return;
        };
        let reason = self
            .source
            .token()
            .reason()
            .unwrap_or(CancelReason::Requested);
        self.span.skipped(&reason);
        drop_contained(f);
        self.count(Event::Dequeued);
        self.finish(Err(NativeError::cancelled(reason)));
    }

    fn keep_guard(&self, guard: CallbackGuard) {
        let mut state = sync::lock(&self.state);
        if state.stage.is_finished() {
            drop(state);
            drop(guard);
        } else {
            state.guards.push(guard);
        }
    }

    fn in_scope(&self) -> bool {
        self.observer.is_some()
    }

    fn release(&self) {
        let result = {
            let mut state = sync::lock(&self.state);
            state.released = true;
            match std::mem::replace(&mut state.stage, Stage::Taken) {
                Stage::Finished(result) => Some(result),
                other => {
                    state.stage = other;
                    None
                }
            }
        };
        drop_contained(result);
    }

    fn mark_detached(&self) -> bool {
        let mut state = sync::lock(&self.state);
        if state.stage.is_finished() {
            return false;
        }
        if !state.detached {
            state.detached = true;
            self.count(Event::Detached);
            drop(state);
            self.span.detached();
        }
        true
    }
}

impl<T, F> JobHandle<T> for Job<T, F>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    fn accept(&self) -> Result<(), SpawnError> {
        let mut state = sync::lock(&self.state);
        if state.rejected {
            return Err(SpawnError::Rejected);
        }
        state.accepted = true;
        self.count(Event::Spawned);
        if state.stage.is_finished() {
            settle(&mut state, &self.source, self.scope_counters());
        }
        drop(state);
        self.span.spawned();
        Ok(())
    }

    fn accept_refused(&self) {
        let mut state = sync::lock(&self.state);
        state.accepted = true;
        self.count(Event::Spawned);
        settle(&mut state, &self.source, self.scope_counters());
    }

    fn control(self: Arc<Self>) -> Arc<dyn JobControl> {
        self
    }

    fn poll_result(&self, cx: &mut Context<'_>) -> Poll<Result<T, NativeError<T>>> {
        let mut state = sync::lock(&self.state);
        match std::mem::replace(&mut state.stage, Stage::Taken) {
            Stage::Finished(result) => Poll::Ready(result),
            Stage::Taken => panic!(
                "`AbortableNative` polled after it completed (in a loop of `select!`, disable the \
                 branch once it has completed, or fuse the future)"
            ),
            pending => {
                state.stage = pending;
                if let Some(grace) = state.abandoned {
                    drop(state);
                    return Poll::Ready(Err(self.abandoned_error(grace)));
                }
                let replaced = match &state.waker {
                    Some(stored) if stored.will_wake(cx.waker()) => None,
                    _ => state.waker.replace(cx.waker().clone()),
                };
                drop(state);
                // A waker's drop is foreign code: never under our lock (invariant 4).
                drop_contained(replaced);
                Poll::Pending
            }
        }
    }

    fn join_blocking(&self) -> Result<T, NativeError<T>> {
        let mut state = sync::lock(&self.state);
        loop {
            match std::mem::replace(&mut state.stage, Stage::Taken) {
                Stage::Finished(result) => return result,
                Stage::Taken => panic!("`AbortableNative` joined after it completed"),
                pending => {
                    state.stage = pending;
                    if let Some(grace) = state.abandoned {
                        drop(state);
                        return Err(self.abandoned_error(grace));
                    }
                    state.sleepers += 1;
                    state = sync::wait(&self.changed, state);
                    state.sleepers -= 1;
                }
            }
        }
    }
}
