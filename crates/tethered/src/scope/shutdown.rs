//! [`ScopeShutdown`]: a scope's shutdown as a future, with its grace on the crate's timer.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use super::ScopeState;
use super::idle::WaitIdle;
use crate::job::JobControl;
use crate::report::{ShutdownReport, Straggler};
use crate::sync::{self, Arc};
use crate::timer::Sleep;

/// Resolves to the [`ShutdownReport`]; made by [`NativeScope::shutdown`](crate::NativeScope::shutdown).
#[must_use = "the jobs are cancelled already; await this to wait for them and get the report"]
pub struct ScopeShutdown {
    state: Arc<ScopeState>,
    started: Instant,
    grace: Duration,
    cancelled: usize,
    /// Waits for the scope to become idle; `None` once the shutdown completed.
    idle: Option<WaitIdle>,
    /// The grace's end, on the crate's timer.
    deadline: Sleep,
}

impl ScopeShutdown {
    pub(crate) fn new(
        state: Arc<ScopeState>,
        started: Instant,
        grace: Duration,
        cancelled: usize,
        idle: WaitIdle,
    ) -> Self {
        ScopeShutdown {
            state,
            started,
            grace,
            cancelled,
            idle: Some(idle),
            deadline: Sleep::until(started.checked_add(grace)),
        }
    }
}

impl Future for ScopeShutdown {
    type Output = ShutdownReport;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<ShutdownReport> {
        let this = self.get_mut();
        assert!(
            this.idle.is_some(),
            "`ScopeShutdown` polled after it completed"
        );
        let idle = this
            .idle
            .as_mut()
            .is_some_and(|idle| Pin::new(idle).poll(cx).is_ready());
        // A deadline the timer thread cannot serve (the OS refused to start it) ends the wait
        // now: a shutdown must not wait past its grace for a wake-up that never comes.
        if !idle && matches!(this.deadline.poll_at(cx.waker()), Ok(false)) {
            return Poll::Pending;
        }
        // Marks the shutdown completed, and deregisters its waker and its timer entry.
        this.idle = None;
        this.deadline = Sleep::until(None);
        Poll::Ready(this.state.report(this.started, this.grace, this.cancelled))
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

impl ScopeState {
    pub(super) fn report(
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
}
