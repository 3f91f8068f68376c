//! The state machine shared by a native job's handle, its runner and its scope.
//!
//! # Lifecycle
//!
//! A job's state is three enums, each with its own legal states, under one lock:
//!
//! ```text
//! Stage: where the closure and its result are
//!
//!            run: token not cancelled          closure returns / panics
//!  Queued ─────────────────────────▶ Running ───────────────────────────▶ Finished ──▶ Consumed
//!    │  run: token already cancelled (closure dropped, never called)          ▲    (the handle took
//!    ├───────────────────────────────────────────────────────────────────────┤     the result, or
//!    │  runner dropped unrun (pool shut down / refused the job)               │     it was dropped
//!    └───────────────────────────────────────────────────────────────────────┘     for a released
//!                                                                                   handle)
//!  (a finish with the handle already released goes straight to Consumed)
//!
//! Handoff: whether the spawner took the job
//!
//!  Offered ──accept (spawn returned Ok, runner alive)──▶ Accepted
//!     └─────runner dropped while spawning──────────────▶ Refused   (accept then fails)
//!
//! Waiter: what the handle does
//!
//!  Waiting ──abandon grace passed, unfinished──▶ Abandoned(grace) ──handle gone──▶ Released
//!     └───────────handle dropped or detached─────────────────────────────────────▶ Released
//! ```
//!
//! Two flags stay beside them, `detached` and `parked`. `detached` is membership in
//! `stats().detached`, set once on an unfinished job whose handle let go outside a scope, that
//! was abandoned, or that a scope's shutdown left behind, and counted out when it finishes: a
//! counter's membership, set from any stage but the last and by three different owners, not a
//! step of any one lifecycle. `parked` is membership in `stats().idle` instead of `running`,
//! for an external job in `Running` whose work waits for its next turn.
//! A job is counted in `stats().cancelled` when the second of `Finished` and `Accepted` is
//! reached (each is reached once, under the lock), so no "settled" flag is needed.
//!
//! # Invariants
//!
//! 1. The closure is called at most once, and only from `Queued` with the token not cancelled
//!    at that moment; a cancel that completed before the runner started is always seen (its
//!    flag store happens before the runner's load).
//! 2. `Finished` (or `Consumed`, for a released handle) is entered exactly once, after the
//!    closure has returned (or was never called), so a handle that observes it knows the
//!    native code is done with the job.
//! 3. The result moves out exactly once (`Finished` to `Consumed`), or the handle resolves once
//!    to `Abandoned` and never looks at the result.
//! 4. No user code (the closure, its drop, a waker's wake or drop, a spawner, a scope's next
//!    job) runs while `state` is locked, and the job's lock is never held while another lock
//!    is taken.
//! 5. Counters: `queued` from creation until the closure was started (after `running` went
//!    up) or dropped unrun (after its drop returned, so whatever that drop spawned is counted
//!    first: the counts never read 0 while work is handed on); `running` from right before
//!    the closure is called until right after it returned, before `Finished` is published;
//!    `detached` from the moment `detached` is set on an unfinished job until it finishes.
//! 6. A thread blocks on `changed` only in `join_blocking`, counted in `sleepers` from the
//!    critical section in which it found the job unfinished until it holds the lock again.
//!    `finish` and `abandon` read `sleepers` in the critical section that changes what such a
//!    thread waits for and notify only if it is not zero, so a job that nobody joins blocking
//!    (every awaited job) makes no futex system call when it finishes.
//!
//! The job's state is a mutex-protected set of enums rather than an atomic word: it is locked
//! twice per job (start, finish) plus once per poll of the handle, never in the closure's hot
//! loop, and the lock lets the result, the waker and the stage change together.
//!
//! # Files
//!
//! This file holds the job, its lifecycle and the type-erased views that handles, runners and
//! scopes hold; `run.rs` the runner's side (start, skip, finish, external completion);
//! `cancel.rs` what a cancel and an abandon do; `handle.rs` the handle's and the scope's side.

mod cancel;
mod handle;
mod run;

use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::callback::CallbackGuard;
use crate::error::NativeError;
use crate::job_id::JobId;
use crate::reason::CancelReason;
use crate::spawn_error::SpawnError;
use crate::stats::{self, Counters, Event};
use crate::sync::{Arc, Condvar, Mutex};
use crate::token::CancelSource;
use crate::token::CancelToken;
use crate::trace::JobSpan;

/// What a job keeps of its [`JobOptions`](crate::JobOptions) besides its closure and token.
#[derive(Clone, Debug, Default)]
pub(crate) struct Settings {
    pub(crate) name: Option<Arc<str>>,
    /// The grace: how long the handle waits after a cancel before it abandons the job.
    pub(crate) grace: Option<Duration>,
    /// A cancel can come from outside the handle: a parent token, a deadline.
    pub(crate) outside_cancels: bool,
    pub(crate) panic: crate::panic::PanicPolicy,
}

/// Told when a job finishes, from the thread that finished it, with no lock held; and counts
/// the job's events beside the process-wide counters.
pub(crate) trait FinishObserver: Send + Sync {
    fn job_finished(&self, id: JobId);
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
    id: JobId,
    settings: Settings,
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
    handoff: Handoff,
    waiter: Waiter,
    /// The job counts as detached (see the module docs: a counter's membership).
    detached: bool,
    /// An external job counts as idle rather than running (`Completer::set_idle`): a
    /// counter's membership too, held only while `Running`.
    parked: bool,
    /// A cancel reached the job while it ran: it is in the stubborn watch (`stubborn.rs`)
    /// until it finishes. Membership too, set once, only while `Running`.
    watched: bool,
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
    /// What the `tracing` feature records of the cancel; nothing without it.
    #[cfg(feature = "tracing")]
    traced: cancel::Traced,
}

/// Where the closure and its result are (see the module docs).
enum Stage<T, F> {
    Queued(F),
    Running,
    Finished(Result<T, NativeError<T>>),
    Consumed,
}

impl<T, F> Stage<T, F> {
    fn is_finished(&self) -> bool {
        matches!(self, Stage::Finished(_) | Stage::Consumed)
    }
}

/// Whether the spawner took the job (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Handoff {
    /// Made, handed to a spawner (or a scope's queue), not yet confirmed.
    Offered,
    /// The spawner returned `Ok` with the runner alive (or the job was counted as a refused
    /// job that its caller hands out anyway): the job counts in the stats.
    Accepted,
    /// The runner was dropped unrun before the spawner returned: the spawner refused the job.
    Refused,
}

/// What the handle does (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Waiter {
    /// The handle is held and waits for the result.
    Waiting,
    /// The handle stopped waiting after the abandon grace; it resolves to
    /// `NativeError::Abandoned` while the closure runs on.
    Abandoned(Duration),
    /// The handle is gone (dropped or detached): nobody will take the result, which is dropped
    /// (contained) as soon as it exists.
    Released,
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
    fn id(&self) -> JobId;
    fn name(&self) -> Option<&str>;
    fn source(&self) -> &CancelSource;
    fn is_finished(&self) -> bool;
    /// Marks an unfinished job detached (counted in `stats().detached`); `true` if it was
    /// unfinished.
    fn mark_detached(&self) -> bool;
    /// After a cancel: a job whose closure has not started finishes now, with the cancel's
    /// reason, its closure dropped unrun; the pool's later run of its task does nothing.
    fn finish_if_queued(&self);
    /// Stops a job that must never run (its spawner refused it, or it is made stopped): its
    /// token is cancelled with `reason` (unless cancelled already) and it finishes unrun now,
    /// so a task that a spawner kept anyway only finds it finished.
    fn stop_unrun(&self, reason: CancelReason) {
        self.source().cancel(reason);
        self.finish_if_queued();
    }
    /// After a cancel of its token: a job whose work is running enters the stubborn watch,
    /// which counts the cancel and times the return (`stubborn.rs`); once per job.
    fn cancel_reached(&self);
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

/// The closure type of a job whose work runs elsewhere (see `spawn_external`): a
/// placeholder, taken out and dropped when the job starts, never called.
pub(crate) type External<T> = fn(CancelToken) -> T;

/// The placeholder closure of an external job.
pub(crate) fn external_placeholder<T>() -> External<T> {
    |_token| unreachable!("an external job's closure is never called")
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
        settings: Settings,
        observer: Option<Arc<dyn FinishObserver>>,
    ) -> Self {
        let id = JobId::next();
        stats::count(Event::Queued, observer.as_deref().map(|o| o.counters()));
        let span = JobSpan::new(id, settings.name.as_deref());
        Job {
            id,
            settings,
            source,
            state: Mutex::new(State {
                stage: Stage::Queued(f),
                waker: None,
                sleepers: 0,
                handoff: Handoff::Offered,
                waiter: Waiter::Waiting,
                detached: false,
                parked: false,
                watched: false,
                guards: Vec::new(),
                timer: None,
                #[cfg(feature = "tracing")]
                traced: cancel::Traced::default(),
            }),
            changed: Condvar::new(),
            observer,
            span,
        }
    }

    /// The counters of the job's scope, if it has one.
    fn scope_counters(&self) -> Option<&Counters> {
        self.observer.as_deref().map(|o| o.counters())
    }

    /// Counts `event` process-wide and in the job's scope.
    fn count(&self, event: Event) {
        stats::count(event, self.scope_counters());
    }
}

/// Counts a finished, accepted job in `stats().cancelled` if its token was cancelled: called
/// exactly once, by whichever of the finish and the acceptance comes second.
fn settle(source: &CancelSource, scope: Option<&Counters>) {
    if source.is_cancelled() {
        stats::count(Event::Cancelled, scope);
    }
}
