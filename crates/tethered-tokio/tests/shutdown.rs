//! Scenario 4: the `Runtime` is dropped while 50 jobs run.
//!
//! Dropping a tokio `Runtime` drops its tasks, then waits for every blocking closure without a
//! time limit. Tethered jobs hear the drop of their awaiting task and return, so the drop
//! returns; naive ones run on and the drop hangs, which a watchdog observes from this thread.

mod common;

use std::time::{Duration, Instant};

use common::{RELEASE, RUNTIME, drop_watched, exclusive, runtime};
use tethered::CancelReason;
use tethered_test_support::{Naive, Probe, RETURN_BOUND, report, wait_until};

const JOBS: usize = 50;

/// Every closure returns within [`RETURN_BOUND`]; tokio then joins its threads. One more
/// second for that is generous, and far from "hangs".
const RUNTIME_DROP: Duration = Duration::from_secs(2);

/// Long enough for 50 blocking-pool threads to start on a loaded 2-core machine.
const ALL_STARTED: Duration = Duration::from_secs(10);

#[test]
fn dropping_the_runtime_stops_50_closures_within_1s_and_the_drop_returns() {
    let _serial = exclusive();
    let runtime = runtime();
    let probes: Vec<Probe> = (0..JOBS).map(|_| Probe::new()).collect();
    for probe in &probes {
        let job = probe.stepping_job();
        runtime.spawn(async move { tethered_tokio::spawn_native(job).await });
    }
    assert!(
        wait_until(ALL_STARTED, || probes.iter().all(Probe::started)),
        "not all {JOBS} closures started"
    );

    let dropped_at = Instant::now();
    for probe in &probes {
        probe.mark_cancel(dropped_at);
    }
    let mut dropping = drop_watched(runtime);
    let took = dropping.wait(RUNTIME_DROP);
    assert!(
        took.is_some() || dropping.wait(RELEASE).is_some(),
        "the runtime drop never returned"
    );
    let took = took.unwrap_or_else(|| panic!("the runtime drop took more than {RUNTIME_DROP:?}"));
    eprintln!("[{RUNTIME}] shutdown: Runtime drop with {JOBS} tethered jobs took {took:?}");

    report(
        RUNTIME,
        "shutdown (Runtime drop, 50 jobs)",
        probes.iter().map(Probe::cancel_to_return),
    );
    assert!(
        probes
            .iter()
            .all(|probe| probe.reason() == Some(CancelReason::Dropped))
    );
}

#[test]
fn naive_spawn_blocking_hangs_the_runtime_drop_until_released() {
    let _serial = exclusive();
    let runtime = runtime();
    let naive = Naive::new();
    for _ in 0..JOBS {
        let job = naive.stepping_job();
        runtime.spawn(async move { tokio::task::spawn_blocking(job).await });
    }
    assert!(
        wait_until(ALL_STARTED, || naive.started() == JOBS),
        "not all {JOBS} naive closures started"
    );

    let mut dropping = drop_watched(runtime);
    let took = dropping.wait(RETURN_BOUND);
    // Look first, then stop the closures before asserting, so that a failure here does not
    // leave the drop hanging.
    let still_running = naive.running();
    naive.stop();
    assert!(
        took.is_none(),
        "the runtime drop returned in {took:?} with {JOBS} naive closures running: no leak shown"
    );
    assert_eq!(still_running, JOBS, "naive closures stopped by themselves");
    assert!(
        dropping.wait(RELEASE).is_some(),
        "the runtime drop did not return even after the naive closures were released"
    );
    assert_eq!(naive.running(), 0);
}
