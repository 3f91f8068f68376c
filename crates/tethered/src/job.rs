//! The state machine shared by a native job's handle and its runner.
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
//! # Invariants
//!
//! 1. The closure is called at most once, and only from `Queued` with the token not cancelled
//!    at that moment; a cancel that happened before is seen (the check reads the token's
//!    flag after taking the closure out under the lock, and the cancel's flag store happened
//!    before).
//! 2. `Finished` is entered exactly once, after the closure has returned (or was never called),
//!    so a handle that observes `Finished` knows the native code is done.
//! 3. The result moves out exactly once (`Finished` to `Taken`).
//! 4. No user code (the closure, its drop, a waker) runs while `state` is locked.
//! 5. The `running` counter is incremented right before the closure is called and decremented
//!    right after it returned, before `Finished` is published; `detached` is incremented when a
//!    handle detaches an unfinished job and decremented when that job finishes.
//!
//! The job's state is a mutex-protected enum rather than an atomic word: it is locked twice per
//! job (start, finish) plus once per poll of the handle, never in the closure's hot loop, and
//! the lock lets the result, the waker and the stage change together.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::{Context, Poll, Waker};

use crate::error::{JobPanic, NativeError, SpawnError};
use crate::reason::CancelReason;
use crate::source::CancelSource;
use crate::stats;
use crate::sync::{self, Condvar, Mutex};
use crate::token::CancelToken;

pub(crate) struct Job<T, F> {
    source: CancelSource,
    state: Mutex<State<T, F>>,
    /// Signalled when the job reaches `Finished`.
    finished: Condvar,
}

struct State<T, F> {
    stage: Stage<T, F>,
    /// The handle's waker, woken on `Finished`.
    waker: Option<Waker>,
    /// `spawn_on` got `Ok` from the spawner and the job counts in the stats.
    accepted: bool,
    /// The runner was dropped unrun before the spawner returned: the spawner refused the job.
    rejected: bool,
    /// The finished job has been counted in `stats().cancelled` (if its token was cancelled).
    settled: bool,
    /// The handle detached the job while it was unfinished.
    detached: bool,
}

enum Stage<T, F> {
    Queued(F),
    Running,
    Finished(Result<T, NativeError>),
    Taken,
}

/// The runner's view of a job, with the closure's type erased.
pub(crate) trait RunJob: Send + Sync {
    /// Runs the closure (or skips it if already cancelled) and finishes the job.
    fn run(&self);
    /// The runner was dropped without running: finish with `Cancelled(Shutdown)`.
    fn drop_unrun(&self);
}

/// The handle's view of a job, with the closure's type erased.
pub(crate) trait JobHandle<T>: Send + Sync {
    fn source(&self) -> &CancelSource;
    /// Called once the spawner returned `Ok`.
    fn accept(&self) -> Result<(), SpawnError>;
    fn poll_result(&self, cx: &mut Context<'_>) -> Poll<Result<T, NativeError>>;
    fn join_blocking(&self) -> Result<T, NativeError>;
    fn is_finished(&self) -> bool;
    /// Marks the job detached; no-op if finished.
    fn detach(&self);
}

impl<T, F> Job<T, F>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    pub(crate) fn new(f: F, source: CancelSource) -> Self {
        Job {
            source,
            state: Mutex::new(State {
                stage: Stage::Queued(f),
                waker: None,
                accepted: false,
                rejected: false,
                settled: false,
                detached: false,
            }),
            finished: Condvar::new(),
        }
    }

    /// Publishes `result` and wakes whoever waits for it.
    fn finish(&self, result: Result<T, NativeError>) {
        let waker = {
            let mut state = sync::lock(&self.state);
            state.stage = Stage::Finished(result);
            if state.accepted {
                settle(&mut state, &self.source);
            }
            if state.detached {
                stats::detached_job_finished();
            }
            state.waker.take()
        };
        self.finished.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

/// Counts a finished, accepted job in `stats().cancelled` once, if its token was cancelled.
fn settle<T, F>(state: &mut State<T, F>, source: &CancelSource) {
    if !state.settled {
        state.settled = true;
        if source.is_cancelled() {
            stats::job_cancelled();
        }
    }
}

impl<T, F> RunJob for Job<T, F>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    fn run(&self) {
        let f = {
            let mut state = sync::lock(&self.state);
            match std::mem::replace(&mut state.stage, Stage::Running) {
                Stage::Queued(f) => f,
                // A runner runs once (`NativeTask::run` takes `self`), so this is unreachable;
                // leave the stage as it was rather than run anything twice.
                other => {
                    state.stage = other;
                    return;
                }
            }
        };
        let token = self.source.token();
        if let Some(reason) = token.reason() {
            drop(f);
            self.finish(Err(NativeError::Cancelled(reason)));
            return;
        }
        stats::job_started();
        let outcome = catch_unwind(AssertUnwindSafe(|| f(token)));
        stats::job_returned();
        let result = outcome.map_err(|payload| {
            stats::job_panicked();
            NativeError::Panicked(JobPanic::new(payload))
        });
        self.finish(result);
    }

    fn drop_unrun(&self) {
        let f = {
            let mut state = sync::lock(&self.state);
            match std::mem::replace(&mut state.stage, Stage::Running) {
                Stage::Queued(f) => {
                    state.rejected = !state.accepted;
                    f
                }
                other => {
                    state.stage = other;
                    return;
                }
            }
        };
        self.source.cancel(CancelReason::Shutdown);
        drop(f);
        self.finish(Err(NativeError::Cancelled(CancelReason::Shutdown)));
    }
}

impl<T, F> JobHandle<T> for Job<T, F>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    fn source(&self) -> &CancelSource {
        &self.source
    }

    fn accept(&self) -> Result<(), SpawnError> {
        let mut state = sync::lock(&self.state);
        if state.rejected {
            return Err(SpawnError::Rejected);
        }
        state.accepted = true;
        stats::job_spawned();
        if matches!(state.stage, Stage::Finished(_) | Stage::Taken) {
            settle(&mut state, &self.source);
        }
        Ok(())
    }

    fn poll_result(&self, cx: &mut Context<'_>) -> Poll<Result<T, NativeError>> {
        let mut state = sync::lock(&self.state);
        match std::mem::replace(&mut state.stage, Stage::Taken) {
            Stage::Finished(result) => Poll::Ready(result),
            Stage::Taken => panic!("`AbortableNative` polled after it completed"),
            pending => {
                state.stage = pending;
                match &mut state.waker {
                    Some(stored) if stored.will_wake(cx.waker()) => {}
                    slot => *slot = Some(cx.waker().clone()),
                }
                Poll::Pending
            }
        }
    }

    fn join_blocking(&self) -> Result<T, NativeError> {
        let mut state = sync::lock(&self.state);
        loop {
            match std::mem::replace(&mut state.stage, Stage::Taken) {
                Stage::Finished(result) => return result,
                Stage::Taken => panic!("`AbortableNative` joined after it completed"),
                pending => {
                    state.stage = pending;
                    state = sync::wait(&self.finished, state);
                }
            }
        }
    }

    fn is_finished(&self) -> bool {
        matches!(
            sync::lock(&self.state).stage,
            Stage::Finished(_) | Stage::Taken
        )
    }

    fn detach(&self) {
        let mut state = sync::lock(&self.state);
        if matches!(state.stage, Stage::Queued(_) | Stage::Running) && !state.detached {
            state.detached = true;
            stats::job_detached();
        }
    }
}
