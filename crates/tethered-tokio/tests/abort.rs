//! Scenario 3: the task awaiting the job is aborted (`JoinHandle::abort`).

mod common;

use std::time::Instant;

use common::{assert_naive_job_leaks, assert_tethered_job_returns, spawn_awaiting};
use tethered::CancelReason;

#[test]
fn aborting_the_awaiting_task_stops_the_closure_within_1s_with_reason_dropped() {
    assert_tethered_job_returns("aborted task", CancelReason::Dropped, async |job, probe| {
        let task = spawn_awaiting(job).await;
        probe.mark_cancel(Instant::now());
        task.abort();
        let err = task.await.expect_err("an aborted task does not complete");
        assert!(err.is_cancelled());
    });
}

#[test]
fn naive_spawn_blocking_keeps_spinning_after_its_task_is_aborted() {
    assert_naive_job_leaks("aborted task", async |naive| {
        let task = spawn_awaiting(naive).await;
        task.abort();
        assert!(task.await.expect_err("aborted").is_cancelled());
    });
}

#[test]
fn naive_abort_of_spawn_blocking_itself_does_not_stop_a_started_closure() {
    assert_naive_job_leaks("abort of spawn_blocking", async |naive| {
        naive.abort(); // no effect once the closure runs
    });
}
