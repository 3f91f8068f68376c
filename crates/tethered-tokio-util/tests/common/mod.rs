//! What the link tests need beyond `tethered-test-support`: the runtime they run on and an
//! async wait.

use std::time::{Duration, Instant};

/// The runtime these tests run on, for the timing lines they print.
pub(crate) const RUNTIME: &str = "tokio";

/// How long a test body gets before it counts as hung. Generous: it only keeps a broken run from
/// hanging; a healthy one takes milliseconds.
pub(crate) const RELEASE: Duration = Duration::from_secs(10);

/// A multi-threaded runtime like a small server's: 2 workers, timer on.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build a tokio runtime")
}

/// `tethered_test_support::wait_until` for async code: sleeps on tokio's timer between polls.
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
