//! Scenario 4: async-std has no runtime to drop, so "shutdown" is cancelling every task that
//! awaits one of 50 running jobs, as a program winding down does.

mod common;

use std::time::Instant;

use async_std::task;
use common::{Naive, PATIENCE, Probe, bounded, report, wait_for};
use tethered::CancelReason;

const JOBS: usize = 50;

/// Cancels every task, each `JoinHandle::cancel` waiting until its task's future is dropped;
/// gives the moment the first cancel began.
fn cancel_all<T: Send + 'static>(handles: Vec<task::JoinHandle<T>>) -> Instant {
    let cancelling = Instant::now();
    task::block_on(async {
        for handle in handles {
            assert!(handle.cancel().await.is_none(), "the task had not finished");
        }
    });
    cancelling
}

#[test]
fn cancelling_the_tasks_of_50_running_jobs_returns_every_closure_within_1s() {
    bounded("the shutdown scenario", PATIENCE, || {
        let probes: Vec<_> = (0..JOBS).map(|_| Probe::new()).collect();
        let handles: Vec<_> = probes
            .iter()
            .map(|probe| {
                let probe = probe.clone();
                task::spawn(async move {
                    let job = tethered_async_std::spawn_native(probe.stepping_job());
                    probe.watch(&job);
                    job.await
                })
            })
            .collect();
        wait_for("all 50 closures to start", PATIENCE, || {
            probes.iter().all(|probe| probe.has_started())
        });
        cancel_all(handles);
        report(
            "shutdown (50 tasks cancelled)",
            probes
                .iter()
                .map(|probe| probe.cancel_to_return())
                .collect(),
        );
        for probe in &probes {
            assert_eq!(probe.seen_reason(), Some(CancelReason::Dropped));
        }

        let naive = Naive::new();
        let handles: Vec<_> = (0..JOBS)
            .map(|_| {
                let job = naive.stepping_job();
                task::spawn(async move { task::spawn_blocking(job).await })
            })
            .collect();
        naive.wait_started(JOBS);
        let cancelled_at = cancel_all(handles);
        naive.assert_leaks(JOBS, cancelled_at, "shutdown");
        naive.release();
    });
}
