//! [`Runtime`]: what a scenario driver needs from an async runtime and its adapter.

use std::future::Future;
use std::time::Duration;

use tethered::{AbortableNative, CancelToken, SpawnError, Spawner};

/// An async runtime with its tethered adapter, as the scenario drivers use it. Each adapter's
/// tests implement it in a few lines, forwarding to the runtime's own functions, so a scenario
/// written once runs each runtime's real code.
pub trait Runtime: 'static {
    /// The runtime's name, as the timing lines print it.
    const NAME: &'static str;

    /// A task of the runtime (async, or a naive blocking one): awaiting it gives its output.
    type Task<T: Send + 'static>: Future<Output = T> + Send + 'static;

    /// The adapter's `spawn_native`.
    fn spawn_native<T, F>(job: F) -> AbortableNative<T>
    where
        F: FnOnce(CancelToken) -> T + Send + 'static,
        T: Send + 'static;

    /// The adapter's spawner, for `JobOptions::on`.
    type Spawner: Spawner + Send + Sync + 'static;

    /// The adapter's spawner for the current thread (`TokioSpawner::try_current`, ...).
    fn spawner() -> Result<Self::Spawner, SpawnError>;

    /// The naive baseline: the runtime's own way to run a blocking closure, which nothing
    /// stops once it runs.
    fn spawn_blocking<T, F>(f: F) -> Self::Task<T>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static;

    /// Spawns an async task.
    fn spawn<F>(future: F) -> Self::Task<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static;

    /// Gives up on a task the runtime's way, as a caller that no longer wants its output does,
    /// without waiting for a blocking closure to finish.
    fn abandon<T: Send + 'static>(task: Self::Task<T>) -> impl Future<Output = ()> + Send;

    /// Runs `future` to completion on this thread.
    fn block_on<F: Future>(future: F) -> F::Output;

    /// The runtime's timer.
    fn sleep(duration: Duration) -> impl Future<Output = ()> + Send;

    /// The runtime's select of two futures: the first to finish wins, the other is dropped.
    fn race<T: Send>(
        first: impl Future<Output = T> + Send,
        second: impl Future<Output = T> + Send,
    ) -> impl Future<Output = T> + Send;

    /// The runtime's own timeout for any future: `None` if `after` passed first (and `future`
    /// was dropped). By default, `future` raced against [`Runtime::sleep`].
    fn give_up_after<F>(
        after: Duration,
        future: F,
    ) -> impl Future<Output = Option<F::Output>> + Send
    where
        F: Future + Send,
        F::Output: Send,
    {
        Self::race(async { Some(future.await) }, async move {
            Self::sleep(after).await;
            None
        })
    }
}
