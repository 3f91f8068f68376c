//! Scenario 4: the `Runtime` is dropped while 50 jobs run.
//!
//! Dropping a tokio `Runtime` drops its tasks, then waits for every blocking closure without a
//! time limit. Tethered jobs hear the drop of their awaiting task and return, so the drop
//! returns; naive ones run on and the drop hangs, which a watchdog observes from this thread.

mod common;

use std::time::{Duration, Instant};

use common::{
    NAIVE_WATCH, Probe, RELEASE, StopFlag, drop_watched, exclusive, report, runtime, slices_until,
    wait_until,
};
use tethered::CancelReason;

const JOBS: usize = 50;

/// Every closure returns within [`CANCEL_TO_RETURN`]; tokio then joins its threads. One more
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
        let probe = probe.clone();
        runtime.spawn(async move {
            tethered_tokio::spawn_native(move |token| {
                probe.run_tethered(&token, || slices_until(|| token.is_cancelled()))
            })
            .await
        });
    }
    assert!(
        wait_until(ALL_STARTED, || probes.iter().all(Probe::started)),
        "not all {JOBS} closures started"
    );

    let dropped_at = Instant::now();
    for probe in &probes {
        probe.mark_cancel(dropped_at);
    }
    let (took, runtime_drop) = drop_watched(runtime, RUNTIME_DROP);
    assert!(
        runtime_drop.finish_within(RELEASE),
        "the runtime drop never returned"
    );
    let took = took.unwrap_or_else(|| panic!("the runtime drop took more than {RUNTIME_DROP:?}"));
    eprintln!("[tethered-tokio] shutdown: Runtime drop with {JOBS} tethered jobs took {took:?}");

    let mut times: Vec<Duration> = probes
        .iter()
        .map(|probe| probe.assert_returned_in_time("shutdown"))
        .collect();
    assert!(
        probes
            .iter()
            .all(|probe| probe.reason() == Some(CancelReason::Dropped))
    );
    report("shutdown (Runtime drop, 50 jobs)", &mut times);
}

#[test]
fn naive_spawn_blocking_hangs_the_runtime_drop_until_released() {
    let _serial = exclusive();
    let runtime = runtime();
    let stop = StopFlag::new();
    let probes: Vec<Probe> = (0..JOBS).map(|_| Probe::new()).collect();
    for probe in &probes {
        let probe = probe.clone();
        let stop = stop.signal();
        runtime.spawn(async move {
            tokio::task::spawn_blocking(move || probe.run_naive(|| slices_until(|| stop.is_set())))
                .await
        });
    }
    assert!(
        wait_until(ALL_STARTED, || probes.iter().all(Probe::started)),
        "not all {JOBS} naive closures started"
    );

    let (took, runtime_drop) = drop_watched(runtime, NAIVE_WATCH);
    // Look first, then set the flag before asserting, so that a failure here does not leave
    // the drop hanging.
    let hung = took.is_none();
    let still_running = probes.iter().filter(|probe| !probe.returned()).count();
    stop.set();
    assert!(
        hung,
        "the runtime drop returned in {took:?} with {JOBS} naive closures running: no leak shown"
    );
    assert_eq!(still_running, JOBS, "naive closures stopped by themselves");
    assert!(
        runtime_drop.finish_within(RELEASE),
        "the runtime drop did not return even after the naive closures were released"
    );
    assert!(probes.iter().all(Probe::returned));
}
