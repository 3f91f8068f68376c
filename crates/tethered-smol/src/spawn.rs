//! [`spawn_native`]: a tethered job on the `blocking` pool.

use tethered::{AbortableNative, CancelToken};

use crate::SmolSpawner;

/// Runs `f` on the [`blocking`] pool (the threads behind `smol::unblock`) and returns the handle
/// that awaits it: `unblock` that stops when its caller stops waiting. Dropping the handle
/// before the job finished (a timeout, a lost race, a dropped `Task`, a dropped `Executor`)
/// cancels the job's token with [`CancelReason::Dropped`](tethered::CancelReason::Dropped).
///
/// It works on any thread, inside an executor or not: the pool is process-wide and needs no
/// runtime (see [`SmolSpawner`]). To name the job or tie it to a request's token, use
/// [`Builder::spawn_on`](tethered::Builder::spawn_on) with a [`SmolSpawner`].
///
/// # Panics
///
/// Never in practice: the `blocking` pool takes every job. A pool that refused a job while
/// shutting down would give a handle already stopped with
/// [`CancelReason::Shutdown`](tethered::CancelReason::Shutdown), as every adapter's
/// `spawn_native` does ([`AbortableNative::or_cancelled`]); any other refusal panics with
/// its message.
///
/// ```
/// use tethered::CancelReason;
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
#[track_caller]
pub fn spawn_native<F, T>(f: F) -> AbortableNative<T>
where
    F: FnOnce(CancelToken) -> T + Send + 'static,
    T: Send + 'static,
{
    AbortableNative::or_cancelled(AbortableNative::builder().spawn_on(&SmolSpawner::new(), f))
}
