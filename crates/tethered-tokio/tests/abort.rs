//! Scenario 3: the task awaiting the job is aborted (`JoinHandle::abort`).

mod common;

use std::time::Instant;

use common::{CANCEL_TO_RETURN, Probe, StopFlag, exclusive, report, runtime, spin_until};
use tethered::CancelReason;

#[test]
fn aborting_the_awaiting_task_stops_the_closure_within_1s_with_reason_dropped() {
    let _serial = exclusive();
    let runtime = runtime();
    let probe = Probe::new();
    runtime.block_on({
        let probe = probe.clone();
        async move {
            let task = tokio::spawn({
                let probe = probe.clone();
                async move {
                    tethered_tokio::spawn_native(move |token| {
                        probe.run_tethered(&token, || spin_until(|| token.is_cancelled()))
                    })
                    .await
                }
            });
            assert!(probe.started_within(CANCEL_TO_RETURN).await);
            probe.mark_cancel(Instant::now());
            task.abort();
            let err = task.await.expect_err("an aborted task does not complete");
            assert!(err.is_cancelled());
        }
    });

    let took = probe.assert_returned_in_time("abort");
    assert_eq!(probe.reason(), Some(CancelReason::Dropped));
    report("aborted task", &mut [took]);
}

#[test]
fn naive_spawn_blocking_keeps_spinning_after_its_task_is_aborted() {
    let _serial = exclusive();
    let runtime = runtime();
    let stop = StopFlag::new();
    let probe = Probe::new();
    runtime.block_on({
        let probe = probe.clone();
        let stop = stop.signal();
        async move {
            let task = tokio::spawn({
                let probe = probe.clone();
                async move {
                    tokio::task::spawn_blocking(move || {
                        probe.run_naive(|| spin_until(|| stop.is_set()))
                    })
                    .await
                }
            });
            assert!(probe.started_within(CANCEL_TO_RETURN).await);
            task.abort();
            assert!(task.await.expect_err("aborted").is_cancelled());
        }
    });

    probe.assert_still_running_after_watch("naive aborted task");

    stop.set();
    assert!(probe.wait_returned(common::RELEASE));
}

#[test]
fn naive_abort_of_spawn_blocking_itself_does_not_stop_a_started_closure() {
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
            naive.abort(); // no effect once the closure runs
        }
    });

    probe.assert_still_running_after_watch("naive abort of spawn_blocking");

    stop.set();
    assert!(probe.wait_returned(common::RELEASE));
}
