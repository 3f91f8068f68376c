//! [`spawn_native`]: a tethered job on async-std's blocking pool.

use tethered::{AbortableNative, CancelToken, JobOptions, Placement, SpawnError};

use crate::AsyncStdSpawner;

/// Runs `f` with [`async_std::task::spawn_blocking`] and returns the handle that awaits it:
/// `spawn_blocking` that stops when its caller stops waiting. Dropping the handle before the
/// job finished (a timeout, a lost race, a cancelled task) cancels the job's token with
/// [`CancelReason::Dropped`](tethered::CancelReason::Dropped).
///
/// It works on any thread, inside an async-std task or not (see [`AsyncStdSpawner`]). To name
/// the job, give it a deadline or tie it to a request's token, use
/// [`spawn_native_with`](crate::spawn_native_with) and [`JobOptions`](tethered::JobOptions).
///
/// # Panics
///
/// Where `spawn_blocking` does: async-std panics if it cannot start its executor threads the
/// first time it is used. A pool that refused a job while shutting down would give a handle
/// already stopped with [`CancelReason::Shutdown`](tethered::CancelReason::Shutdown), as every
/// adapter's `spawn_native` does ([`tethered::__private::spawned_or_stopped`]).
///
/// ```
/// use tethered::{CancelReason, Tethered};
///
/// let (tx, started) = std::sync::mpsc::channel();
/// let job = tethered_async_std::spawn_native(move |token| {
///     tx.send(()).unwrap();
///     token.wait() // blocks this pool thread until the job is cancelled
/// });
/// let token = job.token().clone();
/// started.recv().unwrap();
/// drop(job); // e.g. the task awaiting it was cancelled
/// assert_eq!(token.reason(), Some(CancelReason::Dropped));
/// ```
#[track_caller]
pub fn spawn_native<T, F>(f: F) -> AbortableNative<T>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    tethered::__private::spawned_or_stopped(spawn_native_with(JobOptions::new(), f))
}

/// [`spawn_native`] with [`JobOptions`]: a name, a deadline, a grace, a request's token, a
/// panic policy, and a placement. An [`Unplaced`](tethered::Unplaced) job runs on the pool;
/// one placed [`in_scope`](JobOptions::in_scope) or [`on`](JobOptions::on) a spawner runs
/// there.
///
/// # Errors
///
/// A scope's or spawner's refusal (the pool itself takes every job). The closure never runs
/// then.
///
/// ```
/// use tethered::{CancelReason, CancelSource, JobOptions};
///
/// let request = CancelSource::new();
/// let job = tethered_async_std::spawn_native_with(
///     JobOptions::new().name("render").child_of(&request.token()),
///     |token| token.wait(),
/// )?;
/// request.cancel(CancelReason::Dropped);
/// let stopped = job.join_blocking().unwrap_err();
/// assert_eq!(stopped.cancel_reason(), Some(CancelReason::Dropped));
/// # Ok::<(), tethered::SpawnError>(())
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
    tethered::__private::spawn_or(options, || Ok(AsyncStdSpawner::new()), f)
}
