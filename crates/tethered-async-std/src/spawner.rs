//! [`AsyncStdSpawner`]: puts jobs on async-std's blocking pool.

use tethered::{Runnable, SpawnError, Spawner};

/// Runs jobs with [`async_std::task::spawn_blocking`].
///
/// async-std has no runtime to be inside or outside of: its executor threads start on first
/// use, from any thread, and it has no shutdown. `spawn_blocking` hands the closure to the
/// process-wide [`blocking`](https://docs.rs/blocking) pool (the pool smol uses too), which grows
/// up to `BLOCKING_MAX_THREADS` threads (default 500, read once, when the pool starts), and wraps
/// it in an async-std task that awaits it. So this spawner never refuses a job.
///
/// ```
/// use tethered::JobOptions;
/// use tethered_async_std::AsyncStdSpawner;
///
/// let job = tethered::spawn(JobOptions::new().on(AsyncStdSpawner::new()), |_token| {
///     std::thread::current().name().map(str::to_owned)
/// })?;
/// let thread = async_std::task::block_on(job)?;
/// assert!(thread.unwrap().starts_with("blocking-")); // one of the pool's threads
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct AsyncStdSpawner {
    // Room for settings without breaking `AsyncStdSpawner::new()` callers.
    _private: (),
}

impl AsyncStdSpawner {
    /// The spawner for async-std's blocking pool.
    pub const fn new() -> Self {
        AsyncStdSpawner { _private: () }
    }
}

impl Spawner for AsyncStdSpawner {
    /// Hands `task` to `async_std::task::spawn_blocking`; never fails.
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
        // Dropping async-std's `JoinHandle` detaches its task, which is what we want: the job
        // runs unless its token is cancelled first, and cancelling is the token's business.
        // (`JoinHandle::cancel` would throw away a job that has not started.)
        drop(async_std::task::spawn_blocking(move || task.run()));
        Ok(())
    }
}
