//! [`timeout`]: a job raced against async-io's timer, cancelled with `Timeout` if it loses.

use std::time::Duration;

use async_io::Timer;
use tethered::{CancelReason, CancelWhen, Tethered};

/// The future returned by [`timeout`]: the job `J` raced against async-io's [`Timer`].
pub type Timeout<J> = CancelWhen<J, Timer>;

/// Awaits `job` (an [`AbortableNative`](tethered::AbortableNative), any other [`Tethered`]
/// handle, or `&mut` one) for at most `duration`.
///
/// If the job finishes first, its result. If `duration` passes first, the job's token is
/// cancelled with [`CancelReason::Timeout`] (not `Dropped`, so native code can tell a deadline
/// from a caller that went away) and the future resolves at once, without waiting for the
/// closure: to `Err(NativeError::Abandoned { reason: Timeout, grace: Duration::ZERO })` while
/// the closure still runs (it returns in its own time, counted in `tethered::stats()`), or to
/// the job's own `Err(NativeError::Cancelled { reason: Timeout, returned })` if the cancel
/// finished it at once (`returned` is `None` if it had not started, `Some` if its closure saw
/// the cancel and returned right away). To get what the closure returned, pass `&mut job` and await `job` after an
/// `Abandoned`, or use [`Tethered::cancel_after`], which times out and waits in one step.
///
/// The deadline is fixed when `timeout` is called (async-io's [`Timer::after`], the timer
/// `smol::Timer` re-exports); the timer runs on async-io's reactor, so any executor or
/// `block_on` can await the result. A `duration` too large to add to `Instant::now()` never
/// fires.
///
/// ```
/// use std::time::Duration;
/// use tethered::CancelReason;
///
/// let job = tethered_smol::spawn_native(|token| {
///     while !token.is_cancelled() {
///         std::thread::sleep(Duration::from_millis(1)); // a step of blocking work
///     }
///     token.reason()
/// });
/// let token = job.token();
/// let result = smol::block_on(tethered_smol::timeout(Duration::from_millis(10), job));
/// assert_eq!(result.unwrap_err().cancel_reason(), Some(&CancelReason::Timeout));
/// assert_eq!(token.reason(), Some(CancelReason::Timeout)); // what the closure sees
/// ```
pub fn timeout<J: Tethered>(duration: Duration, job: J) -> Timeout<J> {
    CancelWhen::new(job, Timer::after(duration), CancelReason::Timeout)
}
