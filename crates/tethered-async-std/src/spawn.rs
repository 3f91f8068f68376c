//! [`spawn_native`] and [`try_spawn_native`]: a tethered job on async-std's blocking pool.

use tethered::{AbortableNative, CancelToken, SpawnError};

use crate::AsyncStdSpawner;

/// Runs `f` with [`async_std::task::spawn_blocking`] and returns the handle that awaits it.
/// Dropping the handle before the job finished (a timeout, a lost race, a cancelled task)
/// cancels the job's token with [`CancelReason::Dropped`](tethered::CancelReason::Dropped).
///
/// It works on any thread, inside an async-std task or not (see [`AsyncStdSpawner`]).
///
/// # Panics
///
/// Where `spawn_blocking` does: async-std panics if it cannot start its executor threads the
/// first time it is used. [`try_spawn_native`] has no error case on async-std; a refusal, if a
/// future version brought one, would panic with a message naming `try_spawn_native`.
///
/// ```
/// use tethered::CancelReason;
///
/// let (tx, started) = std::sync::mpsc::channel();
/// let job = tethered_async_std::spawn_native(move |token| {
///     tx.send(()).unwrap();
///     token.wait() // blocks this pool thread until the job is cancelled
/// });
/// let token = job.token();
/// started.recv().unwrap();
/// drop(job); // e.g. the task awaiting it was cancelled
/// assert_eq!(token.reason(), Some(CancelReason::Dropped));
/// ```
pub fn spawn_native<F, T>(f: F) -> AbortableNative<T>
where
    F: FnOnce(CancelToken) -> T + Send + 'static,
    T: Send + 'static,
{
    try_spawn_native(f).unwrap_or_else(|err| {
        panic!("tethered-async-std: {err}; call `try_spawn_native` to handle this error instead")
    })
}

/// Runs `f` with [`async_std::task::spawn_blocking`], like [`spawn_native`], returning an error
/// instead of panicking.
///
/// # Errors
///
/// None on async-std: "outside a runtime" and "after shutdown" do not exist for it. Its
/// executor is process-wide, starts on first use from any thread and never shuts down, and
/// `spawn_blocking` always accepts the closure. The `Result` is there so code written against
/// `tethered-tokio` (whose runtime can be absent or shutting down) moves here unchanged.
///
/// # Panics
///
/// Where `spawn_blocking` does: if async-std cannot start its executor threads the first time
/// it is used.
///
/// ```
/// let job = tethered_async_std::try_spawn_native(|_token| 6 * 7)?;
/// assert_eq!(async_std::task::block_on(job)?, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn try_spawn_native<F, T>(f: F) -> Result<AbortableNative<T>, SpawnError>
where
    F: FnOnce(CancelToken) -> T + Send + 'static,
    T: Send + 'static,
{
    AbortableNative::spawn_on(&AsyncStdSpawner::new(), f)
}
