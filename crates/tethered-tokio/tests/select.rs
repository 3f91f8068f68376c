//! Scenario 2: the job loses a `tokio::select!`.

mod common;

use std::time::{Duration, Instant};

use common::{CANCEL_TO_RETURN, Probe, StopFlag, exclusive, report, runtime, spin_until};
use tethered::CancelReason;

const OTHER_BRANCH: Duration = Duration::from_millis(50);

#[test]
fn losing_a_select_stops_the_closure_within_1s_with_reason_dropped() {
    let _serial = exclusive();
    let runtime = runtime();
    let probe = Probe::new();
    runtime.block_on({
        let probe = probe.clone();
        async move {
            let job = tethered_tokio::spawn_native({
                let probe = probe.clone();
                move |token| probe.run_tethered(&token, || spin_until(|| token.is_cancelled()))
            });
            assert!(probe.started_within(CANCEL_TO_RETURN).await);
            // The other branch's timer cannot fire before this: the time is an upper bound.
            probe.mark_cancel(Instant::now() + OTHER_BRANCH);
            tokio::select! {
                result = job => panic!("the job cannot finish by itself: {result:?}"),
                () = tokio::time::sleep(OTHER_BRANCH) => {}
            }
        }
    });

    let took = probe.assert_returned_in_time("select");
    assert_eq!(probe.reason(), Some(CancelReason::Dropped));
    report(
        "select (from the timer's deadline: an upper bound)",
        &mut [took],
    );
    let from_callback = probe.callback_to_return().expect("the cancel callback ran");
    eprintln!("[tethered-tokio] select: from the cancel callback to the return: {from_callback:?}");
}

#[test]
fn naive_spawn_blocking_keeps_spinning_after_losing_a_select() {
    let _serial = exclusive();
    let runtime = runtime();
    let stop = StopFlag::new();
    let probe = Probe::new();
    runtime.block_on({
        let probe = probe.clone();
        let stop = stop.signal();
        async move {
            let naive = tokio::task::spawn_blocking({
                let probe = probe.clone();
                move || probe.run_naive(|| spin_until(|| stop.is_set()))
            });
            assert!(probe.started_within(CANCEL_TO_RETURN).await);
            tokio::select! {
                result = naive => panic!("the naive job cannot finish by itself: {result:?}"),
                () = tokio::time::sleep(OTHER_BRANCH) => {}
            }
        }
    });

    probe.assert_still_running_after_watch("naive select");

    stop.set();
    assert!(probe.wait_returned(common::RELEASE));
}
