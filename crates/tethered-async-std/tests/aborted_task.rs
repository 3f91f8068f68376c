//! Scenario 3: the task awaiting the job is cancelled (`JoinHandle::cancel`).

mod common;

use common::{AsyncStd, cancel};
use tethered_test_support::scenarios::aborted_task;
use tethered_test_support::{PATIENCE, bounded};

#[test]
fn cancelling_the_awaiting_task_cancels_the_job_and_its_closure_returns_within_1s() {
    aborted_task::tethered_job::<AsyncStd>("aborted task", cancel);
    aborted_task::naive_job::<AsyncStd>("aborted task", cancel);
}

#[test]
fn dropping_the_join_handle_detaches_the_task_and_the_job_runs_on() {
    // async-std's `JoinHandle` detaches on drop: the task, and the job it awaits, are not
    // cancelled. That is async-std's contract, and tethered keeps it: only a dropped future
    // cancels.
    bounded("a detached task awaiting a job", PATIENCE, || {
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = async_std::task::spawn(async move {
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
