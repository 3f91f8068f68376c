//! [`timeout`]: a deadline for a tethered job, on tokio's timer.

use std::time::Duration;

use tethered::{CancelReason, CancelWhen, Tethered};
use tokio::time::Sleep;

/// The future returned by [`timeout`]: the job `J` raced against a tokio [`Sleep`].
pub type Timeout<J> = CancelWhen<J, Sleep>;

/// Awaits `job` (an [`AbortableNative`](tethered::AbortableNative) or any other
/// [`Tethered`] handle) for at most `duration`.
///
/// If the job finishes first, its result. If `duration` passes first, the job's token is
/// cancelled with [`CancelReason::Timeout`] (not `Dropped`, so native code can tell a deadline
/// from a caller that went away) and the future resolves at once to
/// `Err(NativeError::Cancelled(CancelReason::Timeout))`, without waiting for the closure, which
/// returns in its own time.
///
/// # Panics
///
/// Like [`tokio::time::sleep`]: outside a tokio runtime, or in one built without its timer
/// (`enable_time`).
///
/// ```
/// use std::time::Duration;
/// use tethered::{CancelReason, NativeError};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let job = tethered_tokio::spawn_native(|token| {
///     // A blocking wait that a cancel interrupts; returns the reason.
///     token.wait()
/// });
/// let token = job.token();
/// let result = tethered_tokio::timeout(Duration::from_millis(20), job).await;
/// assert!(matches!(result, Err(NativeError::Cancelled(CancelReason::Timeout))));
/// assert_eq!(token.reason(), Some(CancelReason::Timeout));
/// # }
/// ```
#[track_caller]
pub fn timeout<J: Tethered>(duration: Duration, job: J) -> Timeout<J> {
    CancelWhen::new(job, tokio::time::sleep(duration), CancelReason::Timeout)
}
