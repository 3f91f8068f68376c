//! [`spawn_native`] and [`try_spawn_native`]: tethered jobs on the current runtime.

use tethered::{AbortableNative, CancelToken, SpawnError};

use crate::spawner::TokioSpawner;

/// Runs `f` on the current tokio runtime's blocking pool, tethered to the returned handle:
/// `spawn_blocking` that stops when its caller stops waiting.
///
/// Await the [`AbortableNative`] for the closure's result. Dropping it first (a timeout, a lost
/// `select!`, an aborted task, the runtime shutting down) cancels `f`'s [`CancelToken`] with
/// [`CancelReason::Dropped`](tethered::CancelReason::Dropped); a job cancelled before its
/// closure started never runs it, which frees its pool slot at once.
///
/// Once the runtime is shutting down, the closure never runs and the handle resolves to
/// `Err(NativeError::Cancelled(CancelReason::Shutdown))`, as `spawn_blocking`'s handle resolves
/// to a cancelled `JoinError` then: no panic, so clean-up scheduled from a `Drop` during
/// shutdown cannot abort the process. [`try_spawn_native`] reports it as a [`SpawnError`].
///
/// # Panics
///
/// Like [`tokio::spawn`], outside a tokio runtime; use [`try_spawn_native`] to get a
/// [`SpawnError`] instead. Like `spawn_blocking`, it also panics if the OS refuses to start a
/// thread for the pool.
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
            "`tethered_tokio::spawn_native`: {err}; use `tethered_tokio::try_spawn_native` to get this as an error"
        ),
    };
    AbortableNative::spawn_on_or_cancelled(&spawner, f)
}

/// Like [`spawn_native`], but returns an error instead of panicking: [`SpawnError::NoRuntime`]
/// outside a tokio runtime, [`SpawnError::Shutdown`] once the runtime is shutting down.
///
/// ```
/// use tethered::SpawnError;
///
/// // No runtime on this thread:
/// let err = tethered_tokio::try_spawn_native(|_token| ()).unwrap_err();
/// assert!(matches!(err, SpawnError::NoRuntime { runtime: "tokio", .. }));
///
/// // A runtime that has shut down takes no new jobs:
/// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
/// let handle = runtime.handle().clone();
/// drop(runtime);
/// let _inside = handle.enter();
/// let err = tethered_tokio::try_spawn_native(|_token| ()).unwrap_err();
/// assert!(matches!(err, SpawnError::Shutdown { runtime: "tokio" }));
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn try_spawn_native<T, F>(f: F) -> Result<AbortableNative<T>, SpawnError>
where
    F: FnOnce(CancelToken) -> T + Send + 'static,
    T: Send + 'static,
{
    let spawner = TokioSpawner::try_current()?;
    AbortableNative::spawn_on(&spawner, f)
}
