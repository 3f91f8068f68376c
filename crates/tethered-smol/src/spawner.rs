//! [`SmolSpawner`]: puts jobs on the `blocking` thread pool, the pool behind `smol::unblock`.

use tethered::{Runnable, SpawnError, Spawner};

/// Runs jobs on the process-wide [`blocking`] pool: the threads behind `smol::unblock`.
///
/// That pool needs no runtime: it starts its first thread on first use, from any thread,
/// inside an executor or not; it grows up to `BLOCKING_MAX_THREADS` threads (default 500, read
/// once, when the pool starts), lets idle threads exit, and never shuts down. So this spawner
/// has no runtime to look for and never refuses a job; dropping a smol `Executor` does not
/// touch the pool (the jobs its tasks awaited are cancelled because those tasks' futures are
/// dropped, which drops their [`AbortableNative`](tethered::AbortableNative) handles).
///
/// ```
/// use tethered::JobOptions;
/// use tethered_smol::SmolSpawner;
///
/// let job = tethered::spawn(JobOptions::new().on(SmolSpawner::new()), |_token| {
///     std::thread::current().name().map(str::to_owned)
/// })?;
/// let thread = smol::block_on(job)?;
/// assert!(thread.unwrap().starts_with("blocking-")); // one of the pool's threads
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct SmolSpawner {
    // Room for settings without breaking `SmolSpawner::new()` callers.
    _private: (),
}

impl SmolSpawner {
    /// The spawner for the global `blocking` pool.
    pub const fn new() -> Self {
        SmolSpawner { _private: () }
    }
}

impl Spawner for SmolSpawner {
    /// Hands `task` to `blocking::unblock`; never fails.
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
        // Detached, not dropped: dropping the `blocking::Task` would throw away a job that has
        // not started yet. Cancelling is the job token's business, and a job cancelled while
        // queued is skipped by `Runnable::run` without calling its closure.
        blocking::unblock(move || task.run()).detach();
        Ok(())
    }
}
