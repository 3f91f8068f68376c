//! smol as the shared scenario drivers see it.

use std::future::Future;
use std::time::Duration;

use smol::Timer;
use tethered::{AbortableNative, CancelToken, SpawnError};
use tethered_test_support::Runtime;

/// smol, with `tethered-smol`; its naive baseline is `smol::unblock`.
#[derive(Debug)]
pub(crate) struct Smol;

impl Runtime for Smol {
    const NAME: &'static str = "smol";

    type Task<T: Send + 'static> = smol::Task<T>;

    fn spawn_native<T, F>(job: F) -> AbortableNative<T>
    where
        F: FnOnce(CancelToken) -> T + Send + 'static,
        T: Send + 'static,
    {
        tethered_smol::spawn_native(job)
    }

    type Spawner = tethered_smol::SmolSpawner;

    /// Never an error: the `blocking` pool needs no runtime context.
    fn spawner() -> Result<tethered_smol::SmolSpawner, SpawnError> {
        Ok(tethered_smol::SmolSpawner::new())
    }

    fn spawn_blocking<T, F>(f: F) -> smol::Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        smol::unblock(f)
    }

    fn spawn<F>(future: F) -> smol::Task<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        smol::spawn(future)
    }

    /// Drops the task: smol's way to abort one (a queued blocking closure then never runs, a
    /// running one runs on).
    fn abandon<T: Send + 'static>(task: smol::Task<T>) -> impl Future<Output = ()> + Send {
        drop(task);
        async {}
    }

    fn block_on<F: Future>(future: F) -> F::Output {
        smol::block_on(future)
    }

    async fn sleep(duration: Duration) {
        Timer::after(duration).await;
    }

    /// `smol::future::or`, the function behind smol's `select!`-like races.
    fn race<T: Send>(
        first: impl Future<Output = T> + Send,
        second: impl Future<Output = T> + Send,
    ) -> impl Future<Output = T> + Send {
        smol::future::or(first, second)
    }
}
