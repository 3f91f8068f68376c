//! [`TokioSpawner`]: puts tethered jobs on a tokio runtime's blocking pool.

use tethered::{Runnable, SpawnError, Spawner};
use tokio::runtime::Handle;

use crate::stash;

/// The name [`SpawnError`]s of this crate give the runtime.
pub(crate) const RUNTIME: &str = "tokio";

/// What to do instead when there is no runtime, for [`SpawnError::NoRuntime`].
const NO_RUNTIME_HINT: &str = "call it from a tokio task or from a thread inside `Handle::enter`, \
     or pass a `Handle` to `TokioSpawner::new`";

/// A [`Spawner`] that runs jobs on a tokio runtime's blocking pool
/// ([`Handle::spawn_blocking`]).
///
/// [`spawn_native`](crate::spawn_native) uses the runtime it is called from; a `TokioSpawner`
/// names the runtime explicitly, e.g. to spawn from a thread outside it, or to place a job on it
/// with [`JobOptions::on`](tethered::JobOptions::on).
///
/// A job is refused with [`SpawnError::Shutdown`] once the runtime has begun shutting down:
/// tokio itself would accept the closure silently and drop it unrun.
///
/// Each spawning thread keeps tokio's `JoinHandle` of the tasks it spawned, and lets go of
/// those whose tasks have finished on its later spawns (or when it exits), so that the thread
/// that allocated a task also frees it: a free on the pool thread went through the allocator's
/// slow path. A thread keeps at most 4,096; a thread that never spawns again keeps what it
/// kept until it exits. Nothing a job does depends on it.
///
/// ```
/// use tethered::JobOptions;
/// use tethered_tokio::TokioSpawner;
///
/// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
/// let spawner = TokioSpawner::new(runtime.handle().clone());
///
/// // Spawned from a plain thread, run on the runtime's blocking pool.
/// let job = tethered::spawn(JobOptions::new().on(spawner), |_token| 6 * 7)?;
/// assert_eq!(runtime.block_on(job)?, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct TokioSpawner {
    handle: Handle,
}

impl TokioSpawner {
    /// A spawner for the runtime the calling thread is in.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, like [`Handle::current`]. Use
    /// [`try_current`](Self::try_current) to get an error instead.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let spawner = tethered_tokio::TokioSpawner::current();
    /// let job = tethered::spawn(tethered::JobOptions::new().on(spawner), |_| 1);
    /// assert_eq!(job.unwrap().await.unwrap(), 1);
    /// # }
    /// ```
    #[track_caller]
    pub fn current() -> Self {
        match Self::try_current() {
            Ok(spawner) => spawner,
            Err(err) => panic!(
                "`TokioSpawner::current`: {err}; `TokioSpawner::try_current` returns this as an error"
            ),
        }
    }

    /// A spawner for the runtime the calling thread is in, or [`SpawnError::NoRuntime`].
    ///
    /// # Errors
    ///
    /// [`SpawnError::NoRuntime`] outside a tokio runtime.
    ///
    /// ```
    /// use tethered::SpawnError;
    /// use tethered_tokio::TokioSpawner;
    ///
    /// // Not inside a runtime here:
    /// assert!(matches!(TokioSpawner::try_current(), Err(SpawnError::NoRuntime { .. })));
    ///
    /// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    /// let _inside = runtime.enter();
    /// assert!(TokioSpawner::try_current().is_ok());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn try_current() -> Result<Self, SpawnError> {
        Handle::try_current()
            .map(Self::new)
            .map_err(|_| SpawnError::no_runtime(RUNTIME, NO_RUNTIME_HINT))
    }

    /// A spawner for the runtime behind `handle`; usable from any thread.
    ///
    /// ```
    /// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    /// let spawner = tethered_tokio::TokioSpawner::new(runtime.handle().clone());
    /// assert_eq!(spawner.handle().runtime_flavor(), runtime.handle().runtime_flavor());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn new(handle: Handle) -> Self {
        TokioSpawner { handle }
    }

    /// The handle of the runtime this spawner uses.
    ///
    /// ```
    /// let runtime = tokio::runtime::Builder::new_current_thread().build()?;
    /// let spawner = tethered_tokio::TokioSpawner::new(runtime.handle().clone());
    /// let _inside = spawner.handle().enter();
    /// assert!(tokio::runtime::Handle::try_current().is_ok());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn handle(&self) -> &Handle {
        &self.handle
    }
}

impl Spawner for TokioSpawner {
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
        // `spawn_blocking` never reports a refusal: once the runtime's blocking pool has begun
        // shutting down it drops the closure unrun, on this thread, before returning (tokio 1.x,
        // `runtime/blocking/pool.rs`, `spawn_task`). The core sees the task dropped during
        // `spawn` and reports `refused()`; a closure queued and then dropped by the pool's
        // shutdown drain completes its job with `CancelReason::Shutdown`.
        //
        // The `JoinHandle` stays on this thread until the task finishes, so that this thread,
        // which allocated the task, also frees it (see `stash.rs`).
        stash::keep(self.handle.spawn_blocking(move || task.run()));
        Ok(())
    }

    /// tokio drops a blocking closure without running it only when its runtime shuts down.
    fn refused(&self) -> SpawnError {
        SpawnError::shutdown(RUNTIME)
    }
}
