//! Scenario 4: the `Executor` holding the tasks that await 50 running jobs is dropped.

mod common;

use std::sync::Arc;
use std::thread;
use std::time::Instant;

use common::{Naive, PATIENCE, Probe, bounded, report, wait_for};
use smol::Executor;
use tethered::CancelReason;

const JOBS: usize = 50;

/// An executor run by a thread of its own, which can be stopped and then dropped.
struct RunningExecutor {
    executor: Arc<Executor<'static>>,
    stop: smol::channel::Sender<()>,
    runner: thread::JoinHandle<()>,
}

impl RunningExecutor {
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

    /// Stops the runner, then drops the executor with every task still on it, as a program
    /// that shuts its executor down does; gives the moment of the drop.
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
    bounded("the shutdown scenario", PATIENCE, || {
        let runtime = RunningExecutor::start();
        let probes: Vec<_> = (0..JOBS).map(|_| Probe::new()).collect();
        for probe in &probes {
            let probe = probe.clone();
            runtime
                .executor
                .spawn(async move {
                    let job = tethered_smol::spawn_native(probe.stepping_job());
                    probe.watch(&job);
                    job.await
                })
                .detach();
        }
        wait_for("all 50 closures to start", PATIENCE, || {
            probes.iter().all(|probe| probe.has_started())
        });
        runtime.shut_down();
        report(
            "shutdown (Executor dropped, 50 jobs)",
            probes
                .iter()
                .map(|probe| probe.cancel_to_return())
                .collect(),
        );
        for probe in &probes {
            assert_eq!(probe.seen_reason(), Some(CancelReason::Dropped));
        }

        let naive = Naive::new();
        let runtime = RunningExecutor::start();
        for _ in 0..JOBS {
            let job = naive.stepping_job();
            runtime
                .executor
                .spawn(async move { smol::unblock(job).await })
                .detach();
        }
        naive.wait_started(JOBS);
        let dropped_at = runtime.shut_down();
        naive.assert_leaks(JOBS, dropped_at, "shutdown");
        naive.release();
    });
}
