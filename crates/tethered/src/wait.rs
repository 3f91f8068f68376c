//! [`WaitCancelled`], the future returned by [`CancelToken::cancelled`](crate::CancelToken::cancelled).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::reason::CancelReason;
use crate::state::{Key, TokenRef};

/// Resolves to the [`CancelReason`] once its token is cancelled.
///
/// Made by [`CancelToken::cancelled`](crate::CancelToken::cancelled). It is `Send`, `Unpin`,
/// needs no runtime, and cannot miss a wake-up. Dropping it before it resolved removes its waker
/// from the token, so a long-lived token does not collect the wakers of abandoned futures.
///
/// ```
/// use tethered::{CancelReason, CancelSource};
///
/// let source = CancelSource::new();
/// let wait = source.token().cancelled();
/// source.cancel(CancelReason::Dropped);
/// assert_eq!(futures_executor::block_on(wait), CancelReason::Dropped);
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct WaitCancelled {
    state: TokenRef,
    /// Our waker's key in the token, once registered.
    key: Option<Key>,
}

impl WaitCancelled {
    pub(crate) fn new(state: TokenRef) -> Self {
        WaitCancelled { state, key: None }
    }
}

impl Future for WaitCancelled {
    type Output = CancelReason;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<CancelReason> {
        let this = self.get_mut();
        if let Some(reason) = this.state.reason() {
            return Poll::Ready(reason);
        }
        // Check and register under the token's lock: a cancel either happened before (we get
        // the reason) or happens after and wakes the waker we stored.
        match this.state.register_waker(&mut this.key, cx.waker()) {
            Ok(()) => Poll::Pending,
            Err(reason) => Poll::Ready(reason),
        }
    }
}

impl Drop for WaitCancelled {
    fn drop(&mut self) {
        if let Some(key) = self.key {
            self.state.deregister_waker(key);
        }
    }
}

impl fmt::Debug for WaitCancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WaitCancelled")
            .field("cancelled", &self.state.is_cancelled())
            .finish()
    }
}
