//! The slot limiter: how many of the scope's jobs run at once, who hands waiting jobs to the
//! spawner as slots free, and the bookkeeping of a job that finishes.

use super::{Inner, ScopeState};
use crate::job::FinishObserver;
use crate::spawner::submit;
use crate::stats::Counters;
use crate::sync;

impl Inner {
    pub(super) fn has_free_slot(&self) -> bool {
        self.max_running
            .is_none_or(|max| self.holding_slot < max.get())
    }
}

impl ScopeState {
    /// Hands waiting runnables to the spawner while slots are free, oldest first.
    pub(super) fn drain(&self) {
        loop {
            let runnable = {
                let mut inner = sync::lock(&self.inner);
                if inner.dispatching || !inner.has_free_slot() {
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
                inner.dispatching = true;
                runnable
            };
            // A refusal (or a spawner's panic) dropped the runnable: its job finished with
            // `Cancelled(Shutdown)`, which its handle reports, and freed its slot.
            let _ = submit(&*self.spawner, runnable);
            sync::lock(&self.inner).dispatching = false;
        }
    }
}

impl FinishObserver for ScopeState {
    fn job_finished(&self, id: crate::JobId) {
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
