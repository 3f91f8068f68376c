//! [`CancelOnDrop`]: a future that cancels a source if it is dropped before completing.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use crate::token::CancelToken;
use crate::token::{CancelGuard, CancelSource};

pin_project! {
    /// Wraps a future; if the wrapper is dropped before the inner future completed, it cancels
    /// its [`CancelSource`] with [`CancelReason::Dropped`](crate::CancelReason::Dropped).
    /// Completing disarms it.
    ///
    /// This is how a drop (a lost `select!`, a timeout, an aborted task) reaches work that lives
    /// outside the future: give the work a token of the source, and wrap the future that awaits
    /// it. With [`CancelToken::on_cancel`] it also wires a native-backed future that has its own
    /// `cancel()` method to Rust's drop-cancellation.
    ///
    /// ```
    /// use tethered::{CancelOnDrop, CancelReason, CancelSource};
    ///
    /// let source = CancelSource::new();
    /// let token = source.token();
    /// let wrapped = CancelOnDrop::new(std::future::pending::<()>(), source);
    /// drop(wrapped); // never completed
    /// assert_eq!(token.reason(), Some(CancelReason::Dropped));
    ///
    /// let source = CancelSource::new();
    /// let token = source.token();
    /// let value = futures_executor::block_on(CancelOnDrop::new(async { 7 }, source));
    /// assert_eq!(value, 7);
    /// assert!(!token.is_cancelled()); // completed: nothing cancelled
    /// ```
    #[must_use = "futures do nothing unless polled"]
    pub struct CancelOnDrop<F> {
        // `None` once the inner future completed. Declared before `future` so that it drops
        // first: the cancel (and the `on_cancel` callbacks it runs) happens while the inner
        // future, and any `CallbackGuard` it owns, is still alive.
        guard: Option<CancelGuard>,
        #[pin]
        future: F,
        token: CancelToken,
    }
}

impl<F> CancelOnDrop<F> {
    /// Wraps `future`; `source` is cancelled if the wrapper is dropped before `future` completes.
    pub fn new(future: F, source: CancelSource) -> Self {
        CancelOnDrop {
            token: source.token(),
            guard: Some(source.drop_guard()),
            future,
        }
    }

    /// A token of the source this wrapper cancels.
    pub fn token(&self) -> CancelToken {
        self.token.clone()
    }

    /// Whether the inner future has completed (the wrapper is disarmed).
    pub fn is_completed(&self) -> bool {
        self.guard.is_none()
    }
}

impl<F: Future> Future for CancelOnDrop<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let output = std::task::ready!(this.future.poll(cx));
        if let Some(guard) = this.guard.take() {
            drop(guard.disarm());
        }
        Poll::Ready(output)
    }
}

impl<F> fmt::Debug for CancelOnDrop<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelOnDrop")
            .field("completed", &self.is_completed())
            .field("token", &self.token)
            .finish_non_exhaustive()
    }
}

/// Adds [`cancel_on_drop`](CancelOnDropExt::cancel_on_drop) to every future.
///
/// ```
/// use tethered::{CancelOnDropExt, CancelReason, CancelSource};
///
/// let source = CancelSource::new();
/// let token = source.token();
/// let fut = std::future::pending::<()>().cancel_on_drop(source);
/// drop(fut);
/// assert_eq!(token.reason(), Some(CancelReason::Dropped));
/// ```
pub trait CancelOnDropExt: Future + Sized {
    /// Wraps `self` in a [`CancelOnDrop`] that cancels `source` if dropped before completion.
    fn cancel_on_drop(self, source: CancelSource) -> CancelOnDrop<Self> {
        CancelOnDrop::new(self, source)
    }
}

impl<F: Future> CancelOnDropExt for F {}
