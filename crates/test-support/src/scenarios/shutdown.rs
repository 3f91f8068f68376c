//! Scenario 4: every task awaiting one of 50 running jobs goes away at once, as when a program
//! shuts down. What "shut down" means is the runtime's (smol drops its `Executor`, async-std,
//! which has no runtime to drop, cancels every task), so the test passes a [`TaskSet`].

use std::future::Future;
use std::time::Instant;

use tethered::CancelReason;

use crate::{Naive, PATIENCE, Probe, Runtime, bounded, report, wait_for};

const JOBS: usize = 50;

/// Tasks that are shut down together.
pub trait TaskSet: Sized {
    /// An empty set, ready to run tasks.
    fn start() -> Self;

    /// Runs `task` as one of the set.
    fn spawn(&mut self, task: impl Future<Output = ()> + Send + 'static);

    /// Shuts every task down (dropping each one's future), as a program winding down does;
    /// gives the moment the shutdown began.
    fn shut_down(self) -> Instant;
}

/// Shutting down the tasks that await 50 running jobs cancels each job with `Dropped`, and
/// every closure returns within [`RETURN_BOUND`](crate::RETURN_BOUND); with 50 naive jobs, all
/// 50 closures run on. `scenario` names the timing line.
pub fn cancels_50_running_jobs<R: Runtime, S: TaskSet>(scenario: &'static str) {
    bounded("the shutdown scenario", PATIENCE, move || {
        let mut tasks = S::start();
        let probes: Vec<_> = (0..JOBS).map(|_| Probe::new()).collect();
        for probe in &probes {
            let job = probe.stepping_job();
            tasks.spawn(async move {
                let _ = R::spawn_native(job).await;
            });
        }
        wait_for("all 50 closures to start", PATIENCE, || {
            probes.iter().all(Probe::started)
        });
        tasks.shut_down();
        report(
            R::NAME,
            scenario,
            probes.iter().map(Probe::cancel_to_return),
        );
        for probe in &probes {
            assert_eq!(probe.reason(), Some(CancelReason::Dropped));
        }

        let naive = Naive::new();
        let mut tasks = S::start();
        for _ in 0..JOBS {
            let job = naive.stepping_job();
            tasks.spawn(async move { R::spawn_blocking(job).await });
        }
        naive.wait_started(JOBS);
        let shut_down_at = tasks.shut_down();
        naive.assert_leaks(R::NAME, "shutdown", JOBS, shut_down_at);
        naive.release();
    });
}
