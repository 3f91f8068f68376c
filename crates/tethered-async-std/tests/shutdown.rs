//! Scenario 4: async-std has no runtime to drop, so "shutdown" is cancelling every task that
//! awaits one of 50 running jobs, as a program winding down does.

mod common;

use std::future::Future;
use std::time::Instant;

use async_std::task::{self, JoinHandle};
use common::{AsyncStd, cancel};
use tethered_test_support::scenarios::shutdown::{self, TaskSet};

/// Tasks on async-std's global executor, shut down by cancelling each one.
struct Tasks(Vec<JoinHandle<()>>);

impl TaskSet for Tasks {
    fn start() -> Self {
        Tasks(Vec::new())
    }

    fn spawn(&mut self, future: impl Future<Output = ()> + Send + 'static) {
        self.0.push(task::spawn(future));
    }

    /// Cancels every task, each `JoinHandle::cancel` waiting until its task's future is
    /// dropped; gives the moment the first cancel began.
    fn shut_down(self) -> Instant {
        let cancelling = Instant::now();
        self.0.into_iter().for_each(cancel);
        cancelling
    }
}

#[test]
fn cancelling_the_tasks_of_50_running_jobs_returns_every_closure_within_1s() {
    shutdown::cancels_50_running_jobs::<AsyncStd, Tasks>("shutdown (50 tasks cancelled)");
}
