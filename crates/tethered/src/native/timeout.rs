//! [`Timeout`]: a deadline the caller hears at once, on the crate's own timer, for any
//! [`Tethered`] handle and any runtime.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use super::Tethered;
use crate::reason::CancelReason;
use crate::timer::Sleep;

/// Awaits tethered work until a deadline: made by [`Tethered::timeout`] and
/// [`Tethered::timeout_at`]. If the work finishes first, its own result; at the deadline, the
/// work is cancelled with [`CancelReason::Timeout`] and the future resolves at once:
///
/// - to the work's own answer, if it was finished by the time the cancel was made: it had not
///   started (`Err(NativeError::Cancelled { reason: Timeout, returned: None, .. })`), or its
///   closure saw the cancel and returned at once (`returned: Some(value)`);
/// - to `Err(NativeError::Abandoned { reason: Timeout, grace: Duration::ZERO, .. })` if it still
///   runs: it returns in its own time, counted in [`stats()`](crate::stats) until it does.
///   Pass `&mut job` to keep the handle, and await it afterwards for what the work returned.
///
/// A result published as the deadline falls is never lost: the work's token decides once
/// between its finish and the cancel. The deadline is kept by the crate's timer thread, so
/// this works on every executor; if that thread cannot be started, the future gives up at once
/// as if the deadline had passed (the work is cancelled: a deadline is never silently
/// dropped).
///
/// ```
/// use std::time::Duration;
/// use tethered::{AbortableNative, NativeError, Tethered};
///
/// let job = AbortableNative::spawn(|_| 7);
/// let answer = futures_executor::block_on(job.timeout(Duration::from_secs(10)));
/// assert_eq!(answer.unwrap(), 7);
/// ```
#[must_use = "futures do nothing unless polled"]
pub struct Timeout<J> {
    job: Option<J>,
    sleep: Sleep,
    /// The deadline fell after the work finished (sealed its token): its result is being
    /// published, so wait for it rather than report a timeout that never happened.
    finishing: bool,
}

impl<J: Tethered> Timeout<J> {
    pub(crate) fn new(job: J, deadline: Option<Instant>) -> Self {
        Timeout {
            job: Some(job),
            sleep: Sleep::until(deadline),
            finishing: false,
        }
    }
}

impl<J: Tethered> Future for Timeout<J> {
    type Output = J::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let job = this
            .job
            .as_mut()
            .expect("`Timeout` polled after it completed");
        // The work first: a result that is already there wins over a deadline that fell.
        if let Poll::Ready(result) = Pin::new(job).poll(cx) {
            this.job = None;
            return Poll::Ready(result);
        }
        if this.finishing {
            return Poll::Pending;
        }
        // A timer that cannot be had counts as the deadline: never wait past it unheard.
        if let Ok(false) = this.sleep.poll_at(cx.waker()) {
            return Poll::Pending;
        }
        let job = this.job.as_mut().expect("held until the future completes");
        let result = match super::cancel_when::fire(job, CancelReason::Timeout, cx) {
            Some(result) => result,
            None => {
                this.finishing = true;
                return Poll::Pending;
            }
        };
        this.job = None;
        Poll::Ready(result)
    }
}

impl<J: fmt::Debug> fmt::Debug for Timeout<J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("job", &self.job)
            .field("sleep", &self.sleep)
            .finish()
    }
}
