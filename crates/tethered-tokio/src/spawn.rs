//! [`spawn_native`]: tethered jobs on the current runtime's blocking pool.

use tethered::{AbortableNative, CancelToken};

use crate::spawner::TokioSpawner;

/// Runs `f` on the current tokio runtime's blocking pool, tethered to the returned handle:
/// `spawn_blocking` that stops when its caller stops waiting. The way an async service runs
/// blocking work.
///
/// Await the [`AbortableNative`] for the closure's result. Dropping it first (a timeout, a lost
/// `select!`, an aborted task, the runtime shutting down) cancels `f`'s [`CancelToken`] with
/// [`CancelReason::Dropped`](tethered::CancelReason::Dropped); a job cancelled before its
/// closure started never runs it, which frees its pool slot at once.
///
/// Once the runtime is shutting down, the closure never runs and the handle resolves to
/// `Err(NativeError::Cancelled { reason: CancelReason::Shutdown, returned: None })`, as
/// `spawn_blocking`'s handle resolves to a cancelled `JoinError` then: no panic, so clean-up
/// scheduled from a `Drop` during shutdown cannot abort the process. To name the job, tie it
/// to a request's token, or get a refusal as a [`SpawnError`](tethered::SpawnError), use
/// [`Builder::spawn_on`](tethered::Builder::spawn_on) with a
/// [`TokioSpawner`](crate::TokioSpawner).
///
/// # Panics
///
/// Like [`tokio::spawn`], outside a tokio runtime (`TokioSpawner::try_current` returns that
/// as an error). Like `spawn_blocking`, also if the OS refuses to start a thread for the pool.
///
/// ```
/// use std::time::Duration;
/// use tethered::CancelReason;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let job = tethered_tokio::spawn_native(|token| {
///     let mut rounds = 0u64;
///     while !token.is_cancelled() {
///         rounds += 1; // one slice of a long computation
///     }
///     rounds
/// });
/// let token = job.token();
///
/// // The caller gives up on the job; the closure hears it and returns.
/// let lost = tokio::time::timeout(Duration::from_millis(10), job).await;
/// assert!(lost.is_err());
/// assert_eq!(token.reason(), Some(CancelReason::Dropped));
/// # }
/// ```
#[track_caller]
pub fn spawn_native<T, F>(f: F) -> AbortableNative<T>
where
    F: FnOnce(CancelToken) -> T + Send + 'static,
    T: Send + 'static,
{
    let spawner = match TokioSpawner::try_current() {
        Ok(spawner) => spawner,
        Err(err) => panic!(
            "`tethered_tokio::spawn_native`: {err}; `TokioSpawner::try_current` returns this as an error"
        ),
    };
    AbortableNative::or_cancelled(AbortableNative::builder().spawn_on(&spawner, f))
}
