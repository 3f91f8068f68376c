//! Scenario 4: the `Executor` holding the tasks that await 50 running jobs is dropped.

mod common;

use std::future::Future;
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use common::Smol;
use smol::Executor;
use tethered_test_support::scenarios::shutdown::{self, TaskSet};

/// An executor run by a thread of its own, which can be stopped and then dropped.
struct RunningExecutor {
    executor: Arc<Executor<'static>>,
    stop: smol::channel::Sender<()>,
    runner: thread::JoinHandle<()>,
}

impl TaskSet for RunningExecutor {
    fn start() -> Self {
        let executor = Arc::new(Executor::new());
        let (stop, stopped) = smol::channel::bounded::<()>(1);
        let runner = thread::spawn({
            let executor = executor.clone();
            move || {
                smol::block_on(executor.run(async move {
                    let _ = stopped.recv().await;
                }))
            }
        });
        RunningExecutor {
            executor,
            stop,
            runner,
        }
    }

    fn spawn(&mut self, task: impl Future<Output = ()> + Send + 'static) {
        self.executor.spawn(task).detach();
    }

    /// Stops the runner, then drops the executor with every task still on it, as a program
    /// that shuts its executor down does.
    fn shut_down(self) -> Instant {
        self.stop.send_blocking(()).expect("the runner is alive");
        self.runner.join().expect("the runner thread ends cleanly");
        let executor =
            Arc::into_inner(self.executor).expect("the stopped runner let go of the executor");
        let dropping = Instant::now();
        drop(executor); // drops each task's future, and with it each job's handle
        dropping
    }
}

#[test]
fn dropping_the_executor_cancels_50_running_jobs_and_every_closure_returns_within_1s() {
    shutdown::cancels_50_running_jobs::<Smol, RunningExecutor>(
        "shutdown (Executor dropped, 50 jobs)",
    );
}
