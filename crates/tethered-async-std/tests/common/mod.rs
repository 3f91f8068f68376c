//! async-std as the shared scenario drivers see it.

use std::future::Future;
use std::time::Duration;

use async_std::prelude::FutureExt;
use async_std::task::{self, JoinHandle};
use tethered::{AbortableNative, CancelToken, SpawnError};
use tethered_test_support::Runtime;

/// async-std, with `tethered-async-std`; its naive baseline is `task::spawn_blocking`.
#[derive(Debug)]
pub(crate) struct AsyncStd;

impl Runtime for AsyncStd {
    const NAME: &'static str = "async-std";

    type Task<T: Send + 'static> = JoinHandle<T>;

    fn spawn_native<T, F>(job: F) -> AbortableNative<T>
    where
        F: FnOnce(CancelToken) -> T + Send + 'static,
        T: Send + 'static,
    {
        tethered_async_std::spawn_native(job)
    }

    type Spawner = tethered_async_std::AsyncStdSpawner;

    /// Never an error: the `blocking` pool needs no runtime context.
    fn spawner() -> Result<tethered_async_std::AsyncStdSpawner, SpawnError> {
        Ok(tethered_async_std::AsyncStdSpawner::new())
    }

    fn spawn_blocking<T, F>(f: F) -> JoinHandle<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        task::spawn_blocking(f)
    }

    fn spawn<F>(future: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        task::spawn(future)
    }

    /// `JoinHandle::cancel`: dropping an async-std handle only detaches its task.
    async fn abandon<T: Send + 'static>(task: JoinHandle<T>) {
        task.cancel().await;
    }

    fn block_on<F: Future>(future: F) -> F::Output {
        task::block_on(future)
    }

    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send {
        task::sleep(duration)
    }

    /// `FutureExt::race`, the function behind async-std's `select!`-like races.
    fn race<T: Send>(
        first: impl Future<Output = T> + Send,
        second: impl Future<Output = T> + Send,
    ) -> impl Future<Output = T> + Send {
        first.race(second)
    }

    /// `async_std::future::timeout`, async-std's own.
    async fn give_up_after<F>(after: Duration, future: F) -> Option<F::Output>
    where
        F: Future + Send,
        F::Output: Send,
    {
        async_std::future::timeout(after, future).await.ok()
    }
}

/// Cancels a task with `JoinHandle::cancel`, async-std's way to abort one, and checks that it
/// had not finished.
#[allow(dead_code, reason = "only the binaries that abort tasks use it")]
pub(crate) fn cancel<T>(handle: JoinHandle<T>) {
    assert!(
        task::block_on(handle.cancel()).is_none(),
        "the task had not finished"
    );
}
