//! [`spawn_native`] and [`spawn_native_with`]: tethered jobs on the current runtime's blocking
//! pool.

use tethered::{AbortableNative, CancelToken, JobOptions, Placement, SpawnError};

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
/// `Err(NativeError::Cancelled { reason: CancelReason::Shutdown, returned: None, .. })`, as
/// `spawn_blocking`'s handle resolves to a cancelled `JoinError` then: no panic, so clean-up
/// scheduled from a `Drop` during shutdown cannot abort the process. For a name, a deadline,
/// a request's token, a scope, or a refusal as a [`SpawnError`], use [`spawn_native_with`].
///
/// # Panics
///
/// Like [`tokio::spawn`], outside a tokio runtime ([`spawn_native_with`] returns that as an
/// error). Like `spawn_blocking`, also if the OS refuses to start a thread for the pool.
///
/// ```
/// use std::time::Duration;
/// use tethered::{CancelReason, Tethered};
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
/// let token = job.token().clone();
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
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    let spawned = spawn_native_with(JobOptions::new(), f);
    if let Err(err @ SpawnError::NoRuntime { .. }) = &spawned {
        panic!(
            "`tethered_tokio::spawn_native`: {err}; `spawn_native_with` returns this as an error"
        );
    }
    tethered::__private::spawned_or_stopped(spawned)
}

/// [`spawn_native`] with [`JobOptions`]: a name, a deadline, a grace, a request's token, a
/// panic policy, and a placement. An [`Unplaced`](tethered::Unplaced) job runs on the current
/// runtime's blocking pool; one placed [`in_scope`](JobOptions::in_scope) or
/// [`on`](JobOptions::on) a spawner runs there, and then needs no runtime here.
///
/// # Errors
///
/// [`SpawnError::NoRuntime`] for an unplaced job outside a tokio runtime;
/// [`SpawnError::Shutdown`] once the runtime shuts down; a scope's or spawner's refusal. The
/// closure never runs then.
///
/// ```
/// use std::time::Duration;
/// use tethered::{CancelReason, CancelSource, JobOptions};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), tethered::SpawnError> {
/// let request = CancelSource::new();
/// let options = JobOptions::new()
///     .name("render-7")
///     .child_of(&request.token())
///     .timeout(Duration::from_millis(20));
/// let job = tethered_tokio::spawn_native_with(options, |token| {
///     while !token.is_cancelled() {}
///     token.reason()
/// })?;
/// let stopped = job.await.unwrap_err();
/// assert_eq!(stopped.cancel_reason(), Some(CancelReason::Timeout));
/// # Ok(())
/// # }
/// ```
pub fn spawn_native_with<P, T, F>(
    options: JobOptions<P>,
    f: F,
) -> Result<AbortableNative<T>, SpawnError>
where
    P: Placement,
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    tethered::__private::spawn_or(options, TokioSpawner::try_current, f)
}
