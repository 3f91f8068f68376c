//! Cancelling a scope's jobs: all of them at once (one cancel of the generation), by an outer
//! token, or for a shutdown, which also closes the scope.

use super::{Lifecycle, ScopeState};
use crate::reason::{CancelReason, Cause};
use crate::sync;

impl ScopeState {
    pub(super) fn close_and_cancel(&self) -> usize {
        let count = {
            let mut inner = sync::lock(&self.inner);
            inner.lifecycle = Lifecycle::Closed;
            inner.jobs.len()
        };
        self.cancel_all(CancelReason::Shutdown, None);
        count
    }

    /// One cancel of the current generation (invariant 2); later jobs get a fresh one.
    pub(super) fn cancel_all(&self, reason: CancelReason, cause: Option<Cause>) {
        let generation = {
            let mut inner = sync::lock(&self.inner);
            match inner.lifecycle {
                Lifecycle::Open => {
                    let next = inner.next_generation();
                    std::mem::replace(&mut inner.generation, next)
                }
                // The generation stays cancelled (invariant 2), and a closed scope needs none.
                Lifecycle::OuterCancelled | Lifecycle::Closed => inner.generation.clone(),
            }
        };
        generation.state.cancel(reason, cause);
        drop(generation);
        self.drain();
    }

    /// The outer token was cancelled: so is every job, now and later (invariant 2).
    pub(super) fn outer_cancelled(&self, reason: CancelReason, cause: Option<Cause>) {
        let generation = {
            let mut inner = sync::lock(&self.inner);
            if inner.lifecycle == Lifecycle::Open {
                inner.lifecycle = Lifecycle::OuterCancelled;
            }
            inner.generation.clone()
        };
        generation.state.cancel(reason, cause);
        drop(generation);
        self.drain();
    }
}
