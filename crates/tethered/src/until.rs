//! [`RunUntilCancelled`]: async code raced against a token, for the async side of a job.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use crate::reason::Cancelled;
use crate::token::CancelToken;
use crate::wait::WaitCancelled;

pin_project! {
    /// Runs a future until it completes or a token is cancelled, whichever comes first; made
    /// by [`CancelToken::run_until_cancelled`]. A cancel that has happened wins over a future
    /// that would complete in the same poll.
    #[must_use = "futures do nothing unless polled"]
    pub struct RunUntilCancelled<F> {
        #[pin]
        future: F,
        cancelled: WaitCancelled,
    }
}

impl CancelToken {
    /// Runs `future` until it completes (`Ok(output)`) or this token is cancelled
    /// (`Err(Cancelled)` with the reason; the future is then dropped with the
    /// `RunUntilCancelled`), like tokio-util's method of that name, with the reason kept.
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource};
    ///
    /// let source = CancelSource::new();
    /// let token = source.token();
    /// let done = futures_executor::block_on(token.run_until_cancelled(async { 5 }));
    /// assert_eq!(done.unwrap(), 5);
    ///
    /// source.cancel(CancelReason::Shutdown);
    /// let stopped = futures_executor::block_on(token.run_until_cancelled(std::future::pending::<()>()));
    /// assert_eq!(stopped.unwrap_err().reason(), CancelReason::Shutdown);
    /// ```
    pub fn run_until_cancelled<F: Future>(&self, future: F) -> RunUntilCancelled<F> {
        RunUntilCancelled {
            future,
            cancelled: self.cancelled(),
        }
    }
}

impl<F: Future> Future for RunUntilCancelled<F> {
    type Output = Result<F::Output, Cancelled>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(reason) = Pin::new(this.cancelled).poll(cx) {
            return Poll::Ready(Err(Cancelled::new(reason)));
        }
        this.future.poll(cx).map(Ok)
    }
}

impl<F> fmt::Debug for RunUntilCancelled<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunUntilCancelled")
            .field("cancelled", &self.cancelled)
            .finish_non_exhaustive()
    }
}
