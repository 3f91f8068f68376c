//! [`Spawner`]: how a job reaches a native thread, and the [`Runnable`] it hands one.

use crate::sync::Arc;
use std::fmt;

use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::contain::{drop_payload, panic_message};
use crate::job::RunJob;
use crate::spawn_error::SpawnError;

/// Puts a [`Runnable`] on a native thread.
///
/// One implementation per runtime lives in its adapter crate (`tethered-tokio`,
/// `tethered-smol`, `tethered-async-std`); [`ThreadSpawner`](crate::ThreadSpawner) is the runtime-agnostic default.
///
/// A spawner must either run the task (call [`Runnable::run`] exactly once, on a thread where
/// blocking is fine) or drop it. Dropping it is always safe: the job then finishes with
/// [`NativeError::Cancelled`](crate::NativeError::Cancelled) with [`CancelReason::Shutdown`](crate::CancelReason::Shutdown),
/// which is what a pool that shuts down with jobs still queued does. A spawner that drops the
/// task before `spawn` returns, or returns `Err`, refused it: [`spawn`](crate::spawn) reports a
/// [`SpawnError`], and the closure never runs (a task the spawner kept anyway only
/// finds its job finished).
///
/// ```
/// use tethered::{JobOptions, Runnable, SpawnError, Spawner};
///
/// /// Runs every job on a fresh `std` thread with a big stack.
/// struct BigStack;
///
/// impl Spawner for BigStack {
///     fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
///         std::thread::Builder::new()
///             .stack_size(16 << 20)
///             .spawn(move || task.run())
///             .map(drop)
///             .map_err(SpawnError::Thread)
///     }
/// }
///
/// let job = tethered::spawn(JobOptions::new().on(BigStack), |_token| 40 + 2).unwrap();
/// assert_eq!(job.join_blocking().unwrap(), 42);
/// ```
pub trait Spawner {
    /// Hands `task` to a native thread, or refuses it with an error.
    ///
    /// # Errors
    ///
    /// Why the task was refused (no thread, a pool that is closed): the job is then finished
    /// as stopped, and its spawn returns the error.
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError>;

    /// The error to report when [`spawn`](Self::spawn) returned `Ok` but dropped the task
    /// before returning: a pool that silently drops jobs once it shuts down can name that
    /// here (tokio's blocking pool does, so `tethered-tokio` reports a shutdown).
    fn refused(&self) -> SpawnError {
        SpawnError::Rejected
    }
}

impl<S: Spawner + ?Sized> Spawner for &S {
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
        (**self).spawn(task)
    }

    fn refused(&self) -> SpawnError {
        (**self).refused()
    }
}

impl<S: Spawner + ?Sized> Spawner for Box<S> {
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
        (**self).spawn(task)
    }

    fn refused(&self) -> SpawnError {
        (**self).refused()
    }
}

impl<S: Spawner + ?Sized> Spawner for Arc<S> {
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
        (**self).spawn(task)
    }

    fn refused(&self) -> SpawnError {
        (**self).refused()
    }
}

/// Hands `task` to `spawner`, or runs it right here if it is cancelled already: then running it
/// only skips its closure, so it needs no thread, and it must not wait behind a full pool.
pub(crate) fn submit<S: Spawner + ?Sized>(spawner: &S, task: Runnable) -> Result<(), SpawnError> {
    if task.is_cancelled() {
        task.run();
        return Ok(());
    }
    // A spawner is user code: a panic in it is a refusal, reported as an error. The task it
    // was given is dropped during the unwind (so its job finishes unrun, as for any refusal).
    match catch_unwind(AssertUnwindSafe(|| spawner.spawn(task))) {
        Ok(result) => result,
        Err(payload) => {
            let message = panic_message(&*payload).to_owned();
            drop_payload(payload);
            Err(SpawnError::other(format!(
                "the spawner panicked: {message}"
            )))
        }
    }
}

/// A job on its way to a native thread, as a [`Spawner`] receives it: what a pool runs (the
/// name async-task gives the same thing), while the caller holds the job's handle, an
/// [`AbortableNative`](crate::AbortableNative).
///
/// [`run`](Runnable::run) it on a thread where blocking is fine, or drop it to refuse it.
/// It is `Send` and `'static`, and costs no allocation beyond the job itself.
#[must_use = "a runnable that is dropped is cancelled with `CancelReason::Shutdown`"]
pub struct Runnable {
    job: Option<Arc<dyn RunJob>>,
}

// See `AbortableNative`: running or dropping the task changes the job's state only under its
// lock, and the closure's panic is caught.
impl std::panic::UnwindSafe for Runnable {}
impl std::panic::RefUnwindSafe for Runnable {}

impl Runnable {
    pub(crate) fn new(job: Arc<dyn RunJob>) -> Self {
        Runnable { job: Some(job) }
    }

    /// The job's name, if it was given one with [`JobOptions::name`](crate::JobOptions::name).
    /// [`ThreadSpawner`](crate::ThreadSpawner) names the thread after it; on any other pool the job renames its
    /// thread while it runs.
    pub fn name(&self) -> Option<&str> {
        self.job.as_ref().and_then(|job| job.name())
    }

    /// Whether the job was cancelled already: running it will only skip its closure.
    pub fn is_cancelled(&self) -> bool {
        self.job.as_ref().is_some_and(|job| job.is_cancelled())
    }

    /// Runs the job here: calls its closure unless its token is already cancelled (then the
    /// closure is dropped, never called), catches a panic, and delivers the result to the
    /// job's handle. Never panics.
    pub fn run(mut self) {
        if let Some(job) = self.job.take() {
            job.run();
        }
    }
}

impl Drop for Runnable {
    fn drop(&mut self) {
        if let Some(job) = self.job.take() {
            job.drop_unrun();
        }
    }
}

impl fmt::Debug for Runnable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runnable")
            .field("name", &self.name())
            .finish_non_exhaustive()
    }
}
