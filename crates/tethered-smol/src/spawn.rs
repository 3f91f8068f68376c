//! [`spawn_native`]: a tethered job on the `blocking` pool.

use tethered::{AbortableNative, CancelToken, JobOptions, Placement, SpawnError};

use crate::SmolSpawner;

/// Runs `f` on the [`blocking`] pool (the threads behind `smol::unblock`) and returns the handle
/// that awaits it: `unblock` that stops when its caller stops waiting. Dropping the handle
/// before the job finished (a timeout, a lost race, a dropped `Task`, a dropped `Executor`)
/// cancels the job's token with [`CancelReason::Dropped`](tethered::CancelReason::Dropped).
///
/// It works on any thread, inside an executor or not: the pool is process-wide and needs no
/// runtime (see [`SmolSpawner`]). For a name, a deadline, a request's token or a scope, use
/// [`spawn_native_with`].
///
/// # Panics
///
/// Never in practice: the `blocking` pool takes every job. A pool that refused a job while
/// shutting down would give a handle already stopped with
/// [`CancelReason::Shutdown`](tethered::CancelReason::Shutdown), as every adapter's
/// `spawn_native` does ([`spawned_or_stopped`](tethered::__private::spawned_or_stopped)); any
/// other refusal panics with its message.
///
/// ```
/// use tethered::{CancelReason, Tethered};
///
/// let (tx, started) = std::sync::mpsc::channel();
/// let job = tethered_smol::spawn_native(move |token| {
///     tx.send(()).unwrap();
///     token.wait() // blocks this pool thread until the job is cancelled
/// });
/// let token = job.token().clone();
/// started.recv().unwrap();
/// drop(job); // e.g. the task awaiting it was dropped
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
/// let job = tethered_smol::spawn_native_with(
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
    tethered::__private::spawn_or(options, || Ok(SmolSpawner::new()), f)
}
