//! [`WaitIdle`]: resolves when a scope has no unfinished job.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::scope::ScopeState;
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
