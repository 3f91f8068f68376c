//! [`CancelWhen`]: tethered work raced against a signal (a shutdown notice, any future).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;

use super::Tethered;
use crate::error::NativeError;
use crate::reason::CancelReason;

pin_project! {
    /// Awaits tethered work; if `signal` completes first, cancels the work with a chosen reason
    /// and stops waiting. Made by [`Tethered::cancel_when`]; [`Timeout`](crate::Timeout) is the
    /// same race against the crate's timer with [`CancelReason::Timeout`].
    ///
    /// It resolves to:
    ///
    /// - the work's own result, if it finished first, or if it was finished by the time the
    ///   cancel was made: it had not started (`Err(NativeError::Cancelled { reason, returned:
    ///   None, .. })`), or its closure saw the cancel and returned at once
    ///   (`returned: Some(value)`);
    /// - `Err(NativeError::Abandoned { reason, grace: Duration::ZERO, .. })` if the closure was
    ///   still running: it returns in its own time, counted in [`stats()`](crate::stats) until
    ///   it does. Pass `&mut job` to keep the handle, and await it afterwards for what the
    ///   closure returned (`Err(NativeError::Cancelled { reason, returned, .. })`); a handle
    ///   whose result this future already delivered must not be awaited again.
    ///
    /// If the work was cancelled earlier for another reason, that reason is the one reported. A
    /// result published as the signal fires is never lost: the work's token decides once
    /// between its finish and the cancel.
    ///
    /// [`NativeError`]: crate::NativeError
    #[must_use = "futures do nothing unless polled"]
    pub struct CancelWhen<J, S> {
        job: Option<J>,
        #[pin]
        signal: S,
        reason: CancelReason,
        // The signal fired after the job had finished (sealed its token): its result is being
        // published, so wait for it rather than report a cancel that never happened.
        finishing: bool,
    }
}

impl<J: Tethered, S: Future> CancelWhen<J, S> {
    pub(crate) fn new(job: J, signal: S, reason: CancelReason) -> Self {
        CancelWhen {
            job: Some(job),
            signal,
            reason,
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
        let job = this.job.as_mut().expect("held until the future completes");
        let Some(result) = fire(job, *this.reason, cx) else {
            *this.finishing = true;
            return Poll::Pending;
        };
        *this.job = None;
        Poll::Ready(result)
    }
}

/// The signal fired: cancels `job` with `reason` and gives what the race resolves to, or
/// `None` if the job had finished first (its result is on its way: the job's poll registered
/// the waker for it).
pub(crate) fn fire<J: Tethered>(
    job: &mut J,
    reason: CancelReason,
    cx: &mut Context<'_>,
) -> Option<J::Output> {
    job.cancel(reason);
    // The reason the token reads: this one, or an earlier cancel's.
    let (reason, cause) = job.token().state.stop()?;
    // A job whose closure had not started finished in the cancel: its own answer.
    Some(match Pin::new(job).poll(cx) {
        Poll::Ready(result) => result,
        Poll::Pending => Err(NativeError::abandoned_now(reason, cause)),
    })
}

impl<J: fmt::Debug, S> fmt::Debug for CancelWhen<J, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelWhen")
            .field("job", &self.job)
            .field("reason", &self.reason)
            .finish_non_exhaustive()
    }
}
