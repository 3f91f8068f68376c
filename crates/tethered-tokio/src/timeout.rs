//! [`timeout`]: a deadline for a tethered job, on tokio's timer.

use std::time::Duration;

use tethered::{CancelReason, CancelWhen, Tethered};
use tokio::time::Sleep;

/// The future returned by [`timeout`]: the job `J` raced against a tokio [`Sleep`].
pub type Timeout<J> = CancelWhen<J, Sleep>;

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
/// let mut job = tethered_tokio::spawn_native(|token| {
///     let mut steps = 0u64;
///     while !token.is_cancelled() {
///         steps += 1; // a step of blocking work
///     }
///     steps
/// });
/// // Answer at the deadline, and keep the handle...
/// let result = match tethered_tokio::timeout(Duration::from_millis(20), &mut job).await {
///     // ...to wait for what the closure returned once it heard the cancel.
///     Err(NativeError::Abandoned { .. }) => job.await,
///     answered => answered,
/// };
/// let err = result.unwrap_err();
/// assert_eq!(err.cancel_reason(), Some(&CancelReason::Timeout));
/// # }
/// ```
#[track_caller]
pub fn timeout<J: Tethered>(duration: Duration, job: J) -> Timeout<J> {
    CancelWhen::new(job, tokio::time::sleep(duration), CancelReason::Timeout)
}
