//! [`CancelWhen`]: a job raced against a signal (a timer, a shutdown notice).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;

use crate::error::NativeError;
use crate::handle::Tethered;
use crate::native::AbortableNative;
use crate::reason::CancelReason;

pin_project! {
    /// Awaits a job; if `signal` completes first, cancels the job with a chosen reason and
    /// stops waiting. Made by [`Tethered::cancel_when`] (and [`AbortableNative::cancel_when`])
    /// for any [`Tethered`] handle; the adapters' `timeout` functions are this with their
    /// runtime's sleep and [`CancelReason::Timeout`], so native code can tell a timeout from a
    /// dropped caller.
    ///
    /// It resolves to:
    ///
    /// - the job's own result, if the job finished first, or if it was finished by the time
    ///   the cancel was made: it had not started (`Err(NativeError::Cancelled { reason,
    ///   returned: None })`), or its closure saw the cancel and returned at once
    ///   (`returned: Some(value)`);
    /// - `Err(NativeError::Abandoned { reason, grace: Duration::ZERO })` if the closure was
    ///   still running: it returns in its own time, counted in [`stats()`](crate::stats) until
    ///   it does. Pass `&mut job` to keep the handle, and await it afterwards for what the
    ///   closure returned (`Err(NativeError::Cancelled { reason, returned })`); a handle whose
    ///   result this future already delivered must not be awaited again.
    ///
    /// A result published as the signal fires is never lost: the job's token decides once
    /// between its finish and the cancel.
    #[must_use = "futures do nothing unless polled"]
    pub struct CancelWhen<J, S> {
        job: Option<J>,
        #[pin]
        signal: S,
        reason: Option<CancelReason>,
        // The signal fired after the job had finished (sealed its token): its result is being
        // published, so wait for it rather than report a cancel that never happened.
        finishing: bool,
    }
}

impl<T> AbortableNative<T> {
    /// Races the job against `signal`. If the job finishes first, its result; if `signal`
    /// completes first, the job is cancelled with `reason` and the future stops waiting at
    /// once (see [`CancelWhen`] for what it resolves to); the closure then returns in its own
    /// time, counted in [`stats()`](crate::stats) until it does.
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason, NativeError};
    ///
    /// let job = AbortableNative::spawn(|token| token.wait());
    /// let token = job.token();
    /// let raced = job.cancel_when(std::future::ready(()), CancelReason::Shutdown);
    /// let err = futures_executor::block_on(raced).unwrap_err();
    /// // Stopped at once: `Cancelled` if it had not started, `Abandoned` if it was running.
    /// assert!(matches!(err, NativeError::Cancelled { .. } | NativeError::Abandoned { .. }));
    /// assert_eq!(err.cancel_reason(), Some(&CancelReason::Shutdown));
    /// assert_eq!(token.reason(), Some(CancelReason::Shutdown));
    /// ```
    pub fn cancel_when<S: Future>(self, signal: S, reason: CancelReason) -> CancelWhen<Self, S> {
        CancelWhen::new(self, signal, reason)
    }
}

impl<J: Tethered, S: Future> CancelWhen<J, S> {
    /// Races `job` against `signal`, to cancel it with `reason` if `signal` completes first.
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason, CancelWhen};
    ///
    /// let job = AbortableNative::spawn(|_token| 7);
    /// let raced = CancelWhen::new(job, std::future::pending::<()>(), CancelReason::Timeout);
    /// assert_eq!(futures_executor::block_on(raced).unwrap(), 7);
    /// ```
    pub fn new(job: J, signal: S, reason: CancelReason) -> Self {
        CancelWhen {
            job: Some(job),
            signal,
            reason: Some(reason),
            finishing: false,
        }
    }
}

impl<J: Tethered, S: Future> Future for CancelWhen<J, S> {
    type Output = J::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let job = this
            .job
            .as_mut()
            .expect("`CancelWhen` polled after it completed");
        // The job first: a result that is already there wins over a signal that fired.
        if let Poll::Ready(result) = Pin::new(job).poll(cx) {
            *this.job = None;
            return Poll::Ready(result);
        }
        if *this.finishing || this.signal.poll(cx).is_pending() {
            return Poll::Pending;
        }
        let reason = this
            .reason
            .take()
            .expect("`CancelWhen` holds its reason until it completes");
        let job = this
            .job
            .as_ref()
            .expect("`CancelWhen` holds its job until it completes");
        let reason = if job.cancel(reason.clone()) {
            reason
        } else {
            match job.token().reason() {
                // Cancelled earlier for another reason, which is then the one to report.
                Some(earlier) => earlier,
                // The job finished first (its token is sealed): its result must not be lost.
                // It is published right after the seal, and the job's poll above registered
                // our waker for it.
                None => {
                    *this.finishing = true;
                    return Poll::Pending;
                }
            }
        };
        let job = this
            .job
            .as_mut()
            .expect("`CancelWhen` holds its job until it completes");
        // A job whose closure had not started finished in the cancel: its own answer.
        let result = match Pin::new(job).poll(cx) {
            Poll::Ready(result) => result,
            Poll::Pending => Err(NativeError::Abandoned {
                reason,
                grace: Duration::ZERO,
            }),
        };
        *this.job = None;
        Poll::Ready(result)
    }
}

impl<J: fmt::Debug, S> fmt::Debug for CancelWhen<J, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelWhen")
            .field("job", &self.job)
            .field("reason", &self.reason)
            .finish_non_exhaustive()
    }
}
