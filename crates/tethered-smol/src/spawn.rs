//! [`spawn_native`] and [`try_spawn_native`]: a tethered job on the `blocking` pool.

use tethered::{AbortableNative, CancelToken, SpawnError};

use crate::SmolSpawner;

/// Runs `f` on the [`blocking`] pool (the threads behind `smol::unblock`) and returns the handle
/// that awaits it. Dropping the handle before the job finished (a timeout, a lost race, a
/// dropped `Task`, a dropped `Executor`) cancels the job's token with
/// [`CancelReason::Dropped`](tethered::CancelReason::Dropped).
///
/// It works on any thread, inside an executor or not: the pool is process-wide and needs no
/// runtime (see [`SmolSpawner`]).
///
/// # Panics
///
/// Never in practice: [`try_spawn_native`] cannot fail on smol. The panic path exists only so
/// that a future refusal surfaces with a message naming `try_spawn_native`.
///
/// ```
/// use std::time::Duration;
/// use tethered::{CancelReason, NativeError};
///
/// let (tx, started) = std::sync::mpsc::channel();
/// let job = tethered_smol::spawn_native(move |token| {
///     tx.send(()).unwrap();
///     token.wait() // blocks this pool thread until the job is cancelled
/// });
/// let token = job.token();
/// started.recv().unwrap();
/// drop(job); // e.g. the task awaiting it was dropped
/// assert_eq!(token.reason(), Some(CancelReason::Dropped));
/// ```
pub fn spawn_native<F, T>(f: F) -> AbortableNative<T>
where
    F: FnOnce(CancelToken) -> T + Send + 'static,
    T: Send + 'static,
{
    try_spawn_native(f).unwrap_or_else(|err| {
        panic!("tethered-smol: {err}; call `try_spawn_native` to handle this error instead")
    })
}

/// Runs `f` on the [`blocking`] pool, like [`spawn_native`], returning an error instead of
/// panicking.
///
/// # Errors
///
/// None on smol: "outside a runtime" and "after shutdown" do not exist for the `blocking` pool, which is process-wide, needs no runtime context and never shuts
/// down; spawning from a plain thread or after every smol `Executor` was dropped works. The
/// `Result` is there so code written against `tethered-tokio` (whose runtime can be absent or
/// shutting down) moves to smol unchanged.
///
/// If the operating system refuses to start a pool thread, `blocking` keeps the job queued
/// until a pool thread is free or can be started; dropping the handle meanwhile cancels it, and its closure
/// never runs.
///
/// ```
/// let job = tethered_smol::try_spawn_native(|_token| 6 * 7)?;
/// assert_eq!(smol::block_on(job)?, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn try_spawn_native<F, T>(f: F) -> Result<AbortableNative<T>, SpawnError>
where
    F: FnOnce(CancelToken) -> T + Send + 'static,
    T: Send + 'static,
{
    AbortableNative::spawn_on(&SmolSpawner::new(), f)
}
