//! Scenario 2: the job loses a `tokio::select!`.

mod common;

use std::time::{Duration, Instant};

use common::{RUNTIME, assert_naive_job_leaks, assert_tethered_job_returns};
use tethered::CancelReason;

const OTHER_BRANCH: Duration = Duration::from_millis(50);

#[test]
fn losing_a_select_stops_the_closure_within_1s_with_reason_dropped() {
    let probe = assert_tethered_job_returns(
        "select (from the timer's deadline: an upper bound)",
        CancelReason::Dropped,
        async |job, probe| {
            // The other branch's timer cannot fire before this: the time is an upper bound.
            probe.mark_cancel(Instant::now() + OTHER_BRANCH);
            tokio::select! {
                result = job => panic!("the job cannot finish by itself: {result:?}"),
                () = tokio::time::sleep(OTHER_BRANCH) => {}
            }
        },
    );
    eprintln!(
        "[{RUNTIME}] select: from the cancel callback to the return: {:?}",
        probe.callback_to_return()
    );
}

#[test]
fn naive_spawn_blocking_keeps_spinning_after_losing_a_select() {
    assert_naive_job_leaks("select", async |task| {
        tokio::select! {
            result = task => panic!("the naive job cannot finish by itself: {result:?}"),
            () = tokio::time::sleep(OTHER_BRANCH) => {}
        }
    });
}
