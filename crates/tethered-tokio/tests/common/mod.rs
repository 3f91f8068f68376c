//! What the tokio scenario tests need beyond `tethered-test-support`: the runtime they run on,
//! a lock that serialises them, an async wait, a watched `Runtime` drop, and the two halves of
//! the scenarios that give up on one spinning job.
//!
//! Every test binary uses a different subset, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::future::Future;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tethered::{AbortableNative, CancelReason};
use tethered_test_support::{Naive, Probe, RETURN_BOUND, Watchdog, report};
use tokio::task::JoinHandle;

/// The runtime these tests run on, for the timing lines they print.
pub(crate) const RUNTIME: &str = "tokio";

/// How long a released naive baseline, or a runtime drop it held up, gets to finish.
/// Generous: it only keeps a broken run from hanging; a healthy one takes milliseconds.
pub(crate) const RELEASE: Duration = Duration::from_secs(10);

/// Serialises the tests of one binary, so a naive baseline spinning on a core does not skew the
/// times another test records. Poison is ignored: a failed test must not fail the others.
pub(crate) fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A multi-threaded runtime like a small server's: 2 workers, timer on.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build a tokio runtime")
}

/// [`tethered_test_support::wait_until`] for async code: sleeps on tokio's timer between polls.
pub(crate) async fn wait_until_async(bound: Duration, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + bound;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Spawns a task that awaits `future`, and returns once the task runs: aborting it then drops
/// a future that was being awaited, not one that was never polled.
pub(crate) async fn spawn_awaiting<F>(future: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (running_tx, running) = tokio::sync::oneshot::channel();
    let task = tokio::spawn(async move {
        let _ = running_tx.send(());
        future.await
    });
    let _ = running.await;
    task
}

/// Drops `runtime` on a thread of its own, which waits for every blocking closure without a
/// time limit: the watchdog gives the time the drop took, or finds it still hanging.
pub(crate) fn drop_watched(runtime: tokio::runtime::Runtime) -> Watchdog<Duration> {
    Watchdog::start("runtime-dropper", move || {
        let start = Instant::now();
        drop(runtime);
        start.elapsed()
    })
}

/// A scenario's tethered half: on a fresh runtime, a job spinning on its token, which
/// `give_up` abandons once the closure runs, the way the scenario's caller does. The closure
/// must return within [`RETURN_BOUND`] of the cancel (the probe's mark if `give_up` makes one,
/// else the moment the cancel callback ran), having seen `reason`; the timing line is
/// `scenario`'s. Gives back the probe for anything else the test wants to print.
pub(crate) fn assert_tethered_job_returns(
    scenario: &str,
    reason: CancelReason,
    give_up: impl AsyncFnOnce(AbortableNative<()>, &Probe),
) -> Probe {
    let _serial = exclusive();
    let runtime = runtime();
    let probe = Probe::new();
    runtime.block_on(async {
        let job = tethered_tokio::spawn_native(probe.spinning_job());
        assert!(
            wait_until_async(RETURN_BOUND, || probe.started()).await,
            "{scenario}: the closure did not start"
        );
        give_up(job, &probe).await;
    });
    report(RUNTIME, scenario, [probe.cancel_to_return()]);
    assert_eq!(probe.reason(), Some(reason), "{scenario}");
    probe
}

/// A scenario's naive half: on a fresh runtime, a plain `spawn_blocking` closure spinning on a
/// stop flag, which `give_up` abandons once it runs, the way the scenario's caller does. The
/// closure must run on (see [`Naive::assert_leaks`]) until the test releases it.
pub(crate) fn assert_naive_job_leaks(scenario: &str, give_up: impl AsyncFnOnce(JoinHandle<()>)) {
    let _serial = exclusive();
    let runtime = runtime();
    let naive = Naive::new();
    runtime.block_on(async {
        let task = tokio::task::spawn_blocking(naive.spinning_job());
        assert!(
            wait_until_async(RETURN_BOUND, || naive.started() == 1).await,
            "{scenario}: the naive closure did not start"
        );
        give_up(task).await;
    });
    naive.assert_leaks(RUNTIME, scenario, 1, Instant::now());
    naive.release();
}
