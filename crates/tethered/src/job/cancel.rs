//! What a cancel does to a job: finish it if its closure has not started, start its abandon
//! deadline, trace it; and the abandon itself.

use std::time::{Duration, Instant};

use super::{Handoff, Job, JobControl, Waiter};
use crate::contain::run_contained;
use crate::error::NativeError;
use crate::reason::CancelReason;
use crate::state::CancelHook;
use crate::stats::Event;
use crate::sync::{self, Arc, Weak};
use crate::token::CancelToken;

/// What the `tracing` feature records of a job's cancel.
#[cfg(feature = "tracing")]
#[derive(Default)]
pub(super) struct Traced {
    /// The cancel event was traced (by the cancel hook or, if the closure returned before
    /// that hook ran, by the return).
    cancel: bool,
    /// When the job's cancel hook ran, for the cancel-to-return time.
    cancelled_at: Option<Instant>,
}

impl<T, F> Job<T, F>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    /// Registers what must happen when the job's token is cancelled: finishing a job still
    /// queued (if its source came from outside, so a cancel may not come through the handle),
    /// the abandon timer (if the job has an abandon grace) and the cancel event (with
    /// tracing). Nothing is registered otherwise, so a plain job costs no callback: its cancels
    /// come through its handle or scope, which finish a queued job themselves.
    pub(crate) fn watch(self: &Arc<Self>) {
        if !self.settings.outside_cancels
            && self.settings.grace.is_none()
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

    fn on_cancelled(self: Arc<Self>, reason: CancelReason) {
        let (finished, accepted) = {
            let state = sync::lock(&self.state);
            (
                state.stage.is_finished(),
                state.handoff == Handoff::Accepted,
            )
        };
        #[cfg(feature = "tracing")]
        self.trace_cancel(reason, finished);
        #[cfg(not(feature = "tracing"))]
        let _ = reason;
        if finished {
            return;
        }
        // A job whose closure has not started finishes now rather than when a pool thread
        // reaches it. Only once accepted: before that, the job is still being handed out
        // (a scope has not listed it yet), and a cancelled job is then run in place anyway.
        if accepted {
            self.finish_if_queued();
        }
        // One that runs is watched until it returns.
        self.cancel_reached();
        if let Some(grace) = self.settings.grace {
            if grace.is_zero() {
                // Nothing to wait for: the handle stops waiting within this cancel, so a
                // caller that cancels sees it resolve without a timer in between.
                self.abandon(grace);
                return;
            }
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
            if state.stage.is_finished() || state.waiter != Waiter::Waiting {
                return;
            }
            state.waiter = Waiter::Abandoned(grace);
            if !state.detached {
                state.detached = true;
                self.count(Event::Detached);
            }
            (state.waker.take(), state.sleepers)
        };
        crate::cancels::count(crate::cancels::Kind::Abandoned, self.stop().0);
        self.span.abandoned(grace);
        if sleepers > 0 {
            self.changed.notify_all();
        }
        if let Some(waker) = waker {
            run_contained(|| waker.wake());
        }
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

    /// What an abandoned handle resolves to.
    pub(super) fn abandoned_error(&self, grace: Duration) -> NativeError<T> {
        let (reason, cause) = self.stop();
        NativeError::Abandoned {
            reason,
            cause,
            grace,
        }
    }

    /// Records the cancel's time and traces it, unless the job finished or the return traced
    /// it first.
    #[cfg(feature = "tracing")]
    fn trace_cancel(&self, reason: CancelReason, finished: bool) {
        let trace = {
            let mut state = sync::lock(&self.state);
            state.traced.cancelled_at = Some(Instant::now());
            let trace = !finished && !state.traced.cancel;
            state.traced.cancel |= trace;
            trace
        };
        if trace {
            self.span.cancelled(reason);
        }
    }

    /// Traces the closure's return, with the time since the cancel if it was cancelled. Waiters
    /// are woken before cancel callbacks run, so a closure can return before its cancel
    /// callback ran: then the cancel is traced here, and its time counts as zero.
    #[cfg(feature = "tracing")]
    pub(super) fn trace_return(&self) {
        let Some(reason) = self.source.state.reason() else {
            self.span.returned(None);
            return;
        };
        let (trace_cancel, since_cancel) = {
            let mut state = sync::lock(&self.state);
            let trace_cancel = !state.traced.cancel;
            state.traced.cancel = true;
            let since = state
                .traced
                .cancelled_at
                .map(|at| at.elapsed())
                .unwrap_or_default();
            (trace_cancel, since)
        };
        if trace_cancel {
            self.span.cancelled(reason);
        }
        self.span.returned(Some(since_cancel));
    }
}

impl<T, F> CancelHook for Job<T, F>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    fn cancelled(self: Arc<Self>, reason: CancelReason) {
        self.on_cancelled(reason);
    }
}
