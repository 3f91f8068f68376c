//! [`ScopeShutdown`]: a scope's shutdown as a future, with its grace on the crate's timer.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use super::ScopeState;
use super::idle::WaitIdle;
use crate::contain::drop_contained;
use crate::job::JobControl;
use crate::report::{ShutdownReport, Straggler};
use crate::sync::{self, Arc, DataMutex};

/// Resolves to the [`ShutdownReport`]; made by [`NativeScope::shutdown`](crate::NativeScope::shutdown).
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
            deadline: started.checked_add(grace),
            grace,
            cancelled,
            idle: Some(idle),
            timer_waker: None,
            timer: None,
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
