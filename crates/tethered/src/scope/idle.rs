//! [`WaitIdle`]: resolves when a scope has no unfinished job.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use super::{Inner, ScopeState};
use crate::contain::drop_contained;
use crate::sync;
use crate::sync::Arc;

/// Resolves when a scope has no unfinished job; made by [`NativeScope::wait_idle`](crate::NativeScope::wait_idle).
#[must_use = "futures do nothing unless polled"]
pub struct WaitIdle {
    state: Arc<ScopeState>,
    key: Option<u64>,
}

impl WaitIdle {
    pub(crate) fn new(state: Arc<ScopeState>) -> Self {
        WaitIdle { state, key: None }
    }
}

impl Future for WaitIdle {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        if this.state.poll_idle(&mut this.key, cx.waker()) {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

impl Drop for WaitIdle {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.state.forget_idle_waker(key);
        }
    }
}

impl fmt::Debug for WaitIdle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitIdle").finish_non_exhaustive()
    }
}

impl Inner {
    pub(super) fn take_idle_wakers(&mut self) -> Vec<Waker> {
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
    /// For [`WaitIdle`]: `true` if the scope is idle (and forgets `key`'s waker); otherwise
    /// stores `waker` under `key` to be woken when it becomes idle.
    fn poll_idle(&self, key: &mut Option<u64>, waker: &Waker) -> bool {
        let mut inner = sync::lock(&self.inner);
        if inner.jobs.is_empty() {
            let old = key.take().and_then(|key| inner.idle_wakers.remove(&key));
            drop(inner);
            drop_contained(old);
            return true;
        }
        let key = *key.get_or_insert_with(|| {
            inner.next_waker += 1;
            inner.next_waker
        });
        let replaced = inner.idle_wakers.insert(key, waker.clone());
        drop(inner);
        // A waker's drop is foreign code: never under the scope's lock (invariant 6).
        drop_contained(replaced);
        false
    }

    /// Forgets the idle waker under `key` (its `WaitIdle` was dropped).
    fn forget_idle_waker(&self, key: u64) {
        let waker = sync::lock(&self.inner).idle_wakers.remove(&key);
        drop_contained(waker);
    }
}
