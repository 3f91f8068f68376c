//! Scenario 3: the task awaiting the job is cancelled (`JoinHandle::cancel`).

mod common;

use std::time::Instant;

use async_std::task;
use common::{Naive, PATIENCE, Probe, bounded, report};
use tethered::CancelReason;

#[test]
fn cancelling_the_awaiting_task_cancels_the_job_and_its_closure_returns_within_1s() {
    bounded("the aborted-task scenario", PATIENCE, || {
        let probe = Probe::new();
        let handle = task::spawn({
            let probe = probe.clone();
            async move {
                let job = tethered_async_std::spawn_native(probe.spinning_job());
                probe.watch(&job);
                job.await
            }
        });
        probe.wait_started();
        assert!(task::block_on(handle.cancel()).is_none());
        report("aborted task", vec![probe.cancel_to_return()]);
        assert_eq!(probe.seen_reason(), Some(CancelReason::Dropped));

        let naive = Naive::new();
        let job = naive.spinning_job();
        let handle = task::spawn(async move { task::spawn_blocking(job).await });
        naive.wait_started(1);
        assert!(task::block_on(handle.cancel()).is_none());
        let gave_up = Instant::now();
        naive.assert_leaks(1, gave_up, "aborted task");
        naive.release();
    });
}

#[test]
fn dropping_the_join_handle_detaches_the_task_and_the_job_runs_on() {
    // async-std's `JoinHandle` detaches on drop: the task, and the job it awaits, are not
    // cancelled. That is async-std's contract, and tethered keeps it: only a dropped future
    // cancels.
    bounded("a detached task awaiting a job", PATIENCE, || {
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = task::spawn(async move {
            let result = tethered_async_std::spawn_native(|token| {
                std::thread::sleep(std::time::Duration::from_millis(20));
                token.is_cancelled()
            })
            .await;
            let _ = tx.send(result.expect("the job ran"));
        });
        drop(handle);
        let cancelled = rx
            .recv_timeout(PATIENCE)
            .expect("the detached task finished");
        assert!(!cancelled);
    });
}
