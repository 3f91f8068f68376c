//! Scenario 3: the task awaiting the job is dropped (smol's way to abort a task).

mod common;

use common::Smol;
use tethered_test_support::scenarios::aborted_task;

#[test]
fn dropping_the_awaiting_task_cancels_the_job_and_its_closure_returns_within_1s() {
    aborted_task::tethered_job::<Smol>("aborted task", drop);
    aborted_task::naive_job::<Smol>("aborted task", drop);
}

#[test]
fn cancelling_the_awaiting_task_waits_for_nothing_but_the_future_drop() {
    aborted_task::tethered_job::<Smol>("aborted task (Task::cancel)", |task| {
        // `Task::cancel` resolves once the future is dropped, which is when the job is cancelled.
        assert!(smol::block_on(task.cancel()).is_none());
    });
}
