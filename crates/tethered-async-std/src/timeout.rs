//! [`timeout`]: a job raced against async-std's timer, cancelled with `Timeout` if it loses.

use std::future::Future;
use std::time::{Duration, Instant};

use tethered::{CancelReason, CancelWhen, Tethered};

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
/// The clock starts when `timeout` is called, as with `tethered_smol::timeout` and
/// `tethered_tokio::timeout`; `async_std::future::timeout` starts it at the first poll
/// instead. The timer is [`async_std::task::sleep`]. A `duration` too large to add to
/// `Instant::now()` never fires.
///
/// ```
/// use std::time::Duration;
/// use tethered::CancelReason;
///
/// let job = tethered_async_std::spawn_native(|token| {
///     while !token.is_cancelled() {
///         std::thread::sleep(Duration::from_millis(1)); // a step of blocking work
///     }
///     token.reason()
/// });
/// let token = job.token();
/// let deadline = tethered_async_std::timeout(Duration::from_millis(10), job);
/// let result = async_std::task::block_on(deadline);
/// assert_eq!(result.unwrap_err().cancel_reason(), Some(&CancelReason::Timeout));
/// assert_eq!(token.reason(), Some(CancelReason::Timeout)); // what the closure sees
/// ```
pub fn timeout<J: Tethered>(
    duration: Duration,
    job: J,
) -> CancelWhen<J, impl Future<Output = ()> + Send> {
    let started = Instant::now();
    let expired = async move {
        async_std::task::sleep(duration.saturating_sub(started.elapsed())).await;
    };
    CancelWhen::new(job, expired, CancelReason::Timeout)
}
