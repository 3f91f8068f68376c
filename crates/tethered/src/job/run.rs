//! The runner's side of a job: starting or skipping its closure, finishing it, and the
//! completion of a job whose work runs elsewhere.

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::{External, Handoff, Job, RunJob, Stage, State, Waiter, settle};
use crate::contain::{drop_contained, run_contained};
use crate::error::NativeError;
use crate::panic::JobPanic;
use crate::reason::CancelReason;
use crate::stats::Event;
use crate::sync;
use crate::thread_name::ThreadName;
use crate::token::CancelToken;

impl<T, F> Job<T, F>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    /// Takes the closure out of `Queued`, leaving `Running`; `None` if it was not queued.
    pub(super) fn take_closure(&self, on_take: impl FnOnce(&mut State<T, F>)) -> Option<F> {
        let mut state = sync::lock(&self.state);
        if !matches!(state.stage, Stage::Queued(_)) {
            // A runner runs once (`Runnable::run` takes `self`), and a cancel or a drop of the
            // runner finds it started or finished: nothing to take.
            return None;
        }
        let Stage::Queued(f) = std::mem::replace(&mut state.stage, Stage::Running) else {
            unreachable!("checked under the same lock")
        };
        on_take(&mut state);
        drop(state);
        // Still counted as queued: the caller counts it dequeued once the closure was
        // started or dropped (invariant 5), so work that a closure's drop hands on (a clean-up
        // job it spawns) is counted before this job stops being counted.
        Some(f)
    }

    /// Finishes a job whose closure will never run, with the token's reason and cause.
    pub(super) fn skip(&self, f: F) {
        let (reason, cause) = self.stop();
        self.span.skipped(reason);
        drop_contained(f);
        self.count(Event::Dequeued);
        self.finish(Err(NativeError::cancelled(reason, cause)), false);
    }

    /// The token's reason and cause, once it was cancelled.
    pub(super) fn stop(&self) -> (CancelReason, Option<crate::Cause>) {
        // Only called once the token was cancelled: it then holds its reason.
        self.source
            .state
            .stop()
            .unwrap_or((CancelReason::Requested, None))
    }

    /// Publishes `result` and wakes whoever waits for it.
    ///
    /// First the job's token is sealed: from here on a cancel is a no-op that says so (returns
    /// `false`), so "finished" and "cancelled" are decided in one place, the token's flag. A
    /// value whose seal lost to a cancel is what the closure returned after that cancel: the
    /// handle gives it as `Cancelled { returned: Some(value) }`, whoever cancelled.
    ///
    /// `ran`: the job's work ran and this is its return (not a skip or a drop unrun). Work that
    /// returns after a cancel is recorded for `cancel_stats()`: by the watch, if the cancel's
    /// side entered the job in it while it ran; else here, since the work returned between
    /// the cancel's flag and that step (microseconds), which counts as no time at all.
    pub(super) fn finish(&self, result: Result<T, NativeError<T>>, ran: bool) {
        let sealed = self.source.state.seal();
        let result = match result {
            Ok(value) if !sealed => {
                let (reason, cause) = self.stop();
                Err(NativeError::Cancelled {
                    reason,
                    cause,
                    returned: Some(Box::new(value)),
                })
            }
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
        let (waker, sleepers, late_guards, unwanted, stubborn) = {
            // Moved in, so the lock is released at the end of this block.
            let mut state = state;
            // Recorded before the result is published, so whoever sees the job finished sees
            // it in `cancel_stats()`; under the lock that `cancel_reached` takes, so the job
            // is recorded once: by the watch, or here.
            let stubborn = if std::mem::take(&mut state.watched) {
                // The work returned after a cancel reached it: timed, and unlisted if stubborn.
                crate::stubborn::returned(self.id)
            } else {
                if ran && !sealed {
                    let reason = self
                        .source
                        .state
                        .reason()
                        .unwrap_or(CancelReason::Requested);
                    crate::stubborn::returned_unwatched(self.settings.name.as_ref(), reason);
                }
                None
            };
            let unwanted = if state.waiter == Waiter::Released {
                state.stage = Stage::Consumed;
                Some(result)
            } else {
                state.stage = Stage::Finished(result);
                None
            };
            // Finished now: counted as cancelled if it was accepted before (else the
            // acceptance counts it).
            if state.handoff == Handoff::Accepted {
                settle(&self.source, self.scope_counters());
            }
            if state.detached {
                self.count(Event::DetachedFinished);
            }
            (
                state.waker.take(),
                state.sleepers,
                std::mem::take(&mut state.guards),
                unwanted,
                stubborn,
            )
        };
        // A stubborn job's return is reported (a `tracing` event) with no lock held; a
        // subscriber's panic, or a cause's `Drop`, is user code: contained, so the handle is
        // still woken below.
        if let Some(stubborn) = stubborn {
            run_contained(|| stubborn.report());
        }
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
}

impl<T, F> Job<T, F>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    /// A panic under [`PanicPolicy::Abort`](crate::PanicPolicy::Abort) ends the process here,
    /// once the panic hook has reported it.
    fn apply_panic_policy(&self, panic: &JobPanic) {
        if self.settings.panic == crate::PanicPolicy::Abort {
            let name = self.settings.name.as_deref().unwrap_or("(unnamed)");
            eprintln!(
                "tethered: job {} {name:?} panicked ({panic}) under PanicPolicy::Abort; aborting the process",
                self.id
            );
            std::process::abort();
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
        if token.is_cancelled() {
            self.skip(f);
            return;
        }
        self.count(Event::Began);
        let outcome = self.span.in_scope(|| {
            // Named after the job while it runs, on whatever pool (restored when it returns).
            let _named = self.settings.name.as_deref().map(ThreadName::set);
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
                self.apply_panic_policy(&panic);
                Err(NativeError::Panicked(panic))
            }
        };
        self.finish(result, true);
    }

    fn drop_unrun(&self) {
        let refused = |state: &mut State<T, F>| {
            if state.handoff == Handoff::Offered {
                state.handoff = Handoff::Refused;
            }
        };
        let Some(f) = self.take_closure(refused) else {
            return;
        };
        // A pool that drops the job shuts down (or refused it): whoever holds the job's token
        // hears it. The token is the job's own, so a caller's token is never touched.
        self.source.cancel(CancelReason::Shutdown);
        drop_contained(f);
        self.count(Event::Dequeued);
        let (reason, cause) = self.stop();
        self.finish(Err(NativeError::cancelled(reason, cause)), false);
    }

    fn name(&self) -> Option<&str> {
        self.settings.name.as_deref()
    }

    fn is_cancelled(&self) -> bool {
        self.source.is_cancelled()
    }
}

impl<T: Send + 'static> Job<T, External<T>> {
    /// Starts an external job whose start waited (for a scope's slot): `false`, with the job
    /// finished (or finishing) as stopped, if its token was cancelled meanwhile or it finished
    /// already; then its work must not start.
    pub(crate) fn begin_external(&self) -> bool {
        let Some(placeholder) = self.take_closure(|_| {}) else {
            return false;
        };
        if self.source.is_cancelled() {
            self.skip(placeholder);
            return false;
        }
        self.count(Event::Began);
        true
    }

    /// Counts the running external job as idle (or running again): `false` if it is not
    /// running (not started, or finished).
    pub(crate) fn set_idle(&self, idle: bool) -> bool {
        let mut state = sync::lock(&self.state);
        if !matches!(state.stage, Stage::Running) {
            return false;
        }
        if state.parked != idle {
            state.parked = idle;
            self.count(if idle { Event::Parked } else { Event::Unparked });
        }
        true
    }

    /// Counts the external job out of `running` (or `idle`) as it completes.
    fn count_return(&self) {
        let parked = std::mem::take(&mut sync::lock(&self.state).parked);
        self.count(if parked {
            Event::ReturnedIdle
        } else {
            Event::Returned
        });
    }

    /// Finishes an external job: with `Some(value)` as a closure's return (the seal decides
    /// whether a cancel came first), with `None` as stopped (the work was lost).
    pub(crate) fn complete(&self, value: Option<T>) {
        self.count_return();
        match value {
            Some(value) => {
                #[cfg(feature = "tracing")]
                self.trace_return();
                self.finish(Ok(value), true);
            }
            None => {
                // The token's reason if it was cancelled; else the work was lost, which its
                // token hears as a shutdown. Work stopped by an earlier cancel returned.
                let cancelled_before = self.source.is_cancelled();
                self.source.cancel(CancelReason::Shutdown);
                let (reason, cause) = self.stop();
                self.finish(Err(NativeError::cancelled(reason, cause)), cancelled_before);
            }
        }
    }

    /// Runs `f`, an external job's work, on the calling thread as a spawned job's closure runs:
    /// inside the job's span, the thread named after the job, a panic caught.
    pub(crate) fn run_here<R>(&self, f: impl FnOnce() -> R) -> Result<R, JobPanic> {
        self.span
            .in_scope(|| {
                let _named = self.settings.name.as_deref().map(ThreadName::set);
                catch_unwind(AssertUnwindSafe(f))
            })
            .map_err(JobPanic::new)
    }

    /// Finishes an external job as panicked.
    pub(crate) fn complete_panicked(&self, panic: JobPanic) {
        self.count_return();
        self.count(Event::Panicked);
        self.span.panicked(panic.message());
        self.apply_panic_policy(&panic);
        self.finish(Err(NativeError::Panicked(panic)), true);
    }

    pub(crate) fn token(&self) -> CancelToken {
        self.source.token()
    }
}
