//! [`spawn_native`]: a tethered job on async-std's blocking pool.

use tethered::{AbortableNative, CancelToken};

use crate::AsyncStdSpawner;

/// Runs `f` with [`async_std::task::spawn_blocking`] and returns the handle that awaits it:
/// `spawn_blocking` that stops when its caller stops waiting. Dropping the handle before the
/// job finished (a timeout, a lost race, a cancelled task) cancels the job's token with
/// [`CancelReason::Dropped`](tethered::CancelReason::Dropped).
///
/// It works on any thread, inside an async-std task or not (see [`AsyncStdSpawner`]). To name
/// the job or tie it to a request's token, use
/// [`Builder::spawn_on`](tethered::Builder::spawn_on) with an [`AsyncStdSpawner`].
///
/// # Panics
///
/// Where `spawn_blocking` does: async-std panics if it cannot start its executor threads the
/// first time it is used. A pool that refused a job while shutting down would give a handle
/// already stopped with [`CancelReason::Shutdown`](tethered::CancelReason::Shutdown), as every
/// adapter's `spawn_native` does ([`AbortableNative::or_cancelled`]).
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
#[track_caller]
pub fn spawn_native<F, T>(f: F) -> AbortableNative<T>
where
    F: FnOnce(CancelToken) -> T + Send + 'static,
    T: Send + 'static,
{
    AbortableNative::or_cancelled(AbortableNative::builder().spawn_on(&AsyncStdSpawner::new(), f))
}
