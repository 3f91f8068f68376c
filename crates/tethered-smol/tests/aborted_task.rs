//! Scenario 3: the task awaiting the job is dropped (smol's way to abort a task).

mod common;

use std::time::Instant;

use common::{Naive, PATIENCE, Probe, bounded, report};
use tethered::CancelReason;

#[test]
fn dropping_the_awaiting_task_cancels_the_job_and_its_closure_returns_within_1s() {
    bounded("the aborted-task scenario", PATIENCE, || {
        let probe = Probe::new();
        let task = smol::spawn({
            let probe = probe.clone();
            async move {
                let job = tethered_smol::spawn_native(probe.spinning_job());
                probe.watch(&job);
                job.await
            }
        });
        probe.wait_started();
        drop(task);
        report("aborted task", vec![probe.cancel_to_return()]);
        assert_eq!(probe.seen_reason(), Some(CancelReason::Dropped));

        let naive = Naive::new();
        let job = naive.spinning_job();
        let task = smol::spawn(async move { smol::unblock(job).await });
        naive.wait_started(1);
        drop(task);
        let gave_up = Instant::now();
        naive.assert_leaks(1, gave_up, "aborted task");
        naive.release();
    });
}

#[test]
fn cancelling_the_awaiting_task_waits_for_nothing_but_the_future_drop() {
    bounded("Task::cancel on a task awaiting a job", PATIENCE, || {
        let probe = Probe::new();
        let task = smol::spawn({
            let probe = probe.clone();
            async move {
                let job = tethered_smol::spawn_native(probe.spinning_job());
                probe.watch(&job);
                job.await
            }
        });
        probe.wait_started();
        // `Task::cancel` resolves once the future is dropped, which is when the job is cancelled.
        assert!(smol::block_on(task.cancel()).is_none());
        report(
            "aborted task (Task::cancel)",
            vec![probe.cancel_to_return()],
        );
        assert_eq!(probe.seen_reason(), Some(CancelReason::Dropped));
    });
}
