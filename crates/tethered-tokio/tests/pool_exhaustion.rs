//! Scenario 5: a blocking pool of 4 threads; 200 jobs are started and cancelled, then one fresh
//! job must get a thread within 1 s.
//!
//! With naive `spawn_blocking`, the 4 closures that run hold their threads after their tasks
//! are aborted and the 196 queued ones still wait for a thread: the fresh job never runs. That
//! is the production outage the leak causes.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{RELEASE, RUNTIME, exclusive, wait_until_async};
use tethered_test_support::{Naive, Probe, RETURN_BOUND, report, wait_until};
use tokio::runtime::Runtime;

const POOL: usize = 4;
const JOBS: usize = 200;

/// Long enough for 200 tasks to be polled and 4 pool threads to start on a loaded machine.
const ALL_QUEUED: Duration = Duration::from_secs(10);

/// A runtime whose blocking pool has [`POOL`] threads.
fn small_pool_runtime() -> Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(POOL)
        .enable_all()
        .build()
        .expect("build a tokio runtime")
}

#[test]
fn cancelled_jobs_free_a_pool_of_4_for_a_fresh_job_within_1s() {
    let _serial = exclusive();
    let runtime = small_pool_runtime();
    let probes: Vec<Probe> = (0..JOBS).map(|_| Probe::new()).collect();
    let queued = Arc::new(AtomicUsize::new(0));
    // How many closures have started, and how many jobs have been handed to the pool.
    let counts = || {
        let started = probes.iter().filter(|probe| probe.started()).count();
        (started, queued.load(Ordering::SeqCst))
    };
    let (fresh_latency, times) = runtime.block_on(async {
        let tasks: Vec<_> = probes
            .iter()
            .map(|probe| {
                let job = probe.stepping_job();
                let queued = queued.clone();
                tokio::spawn(async move {
                    let job = tethered_tokio::spawn_native(job);
                    queued.fetch_add(1, Ordering::SeqCst);
                    job.await
                })
            })
            .collect();
        assert!(
            wait_until_async(ALL_QUEUED, || counts() == (POOL, JOBS)).await,
            "expected {POOL} running and {JOBS} queued, got {:?}",
            counts()
        );

        let cancelled_at = Instant::now();
        for (task, probe) in tasks.iter().zip(&probes) {
            probe.mark_cancel(cancelled_at);
            task.abort();
        }
        let fresh = tethered_tokio::spawn_native(|_token| Instant::now());
        let ran_at = tokio::time::timeout(RETURN_BOUND, fresh)
            .await
            .expect("the fresh job got no thread within 1 s")
            .expect("the fresh job ran");
        for task in tasks {
            assert!(task.await.expect_err("aborted").is_cancelled());
        }
        let times: Vec<Duration> = probes
            .iter()
            .filter(|probe| probe.started())
            .map(Probe::cancel_to_return)
            .collect();
        (ran_at - cancelled_at, times)
    });

    // `abort` is asynchronous: a queued job whose task a worker has not yet dropped can still
    // start on a freed thread, and then returns at once. Most never run their closure.
    let never_ran = probes.iter().filter(|probe| !probe.started()).count();
    eprintln!(
        "[{RUNTIME}] pool exhaustion: fresh job ran {fresh_latency:?} after {JOBS} jobs \
         were cancelled; {never_ran} of the {} queued jobs never ran their closure",
        JOBS - POOL
    );
    report(RUNTIME, "pool exhaustion (every closure that ran)", times);
    // The other test of this binary is naive: no tethered job of another test is in flight.
    tethered::testing::assert_all_returned(RELEASE);
}

#[test]
fn naive_spawn_blocking_starves_a_fresh_job_until_released() {
    let _serial = exclusive();
    let runtime = small_pool_runtime();
    let naive = Naive::new();
    let queued = Arc::new(AtomicUsize::new(0));
    let counts = || (naive.started(), queued.load(Ordering::SeqCst));
    runtime.block_on(async {
        let tasks: Vec<_> = (0..JOBS)
            .map(|_| {
                let job = naive.stepping_job();
                let queued = queued.clone();
                tokio::spawn(async move {
                    let naive = tokio::task::spawn_blocking(job);
                    queued.fetch_add(1, Ordering::SeqCst);
                    naive.await
                })
            })
            .collect();
        assert!(
            wait_until_async(ALL_QUEUED, || counts() == (POOL, JOBS)).await,
            "expected {POOL} running and {JOBS} queued, got {:?}",
            counts()
        );
        for task in &tasks {
            task.abort();
        }

        let mut fresh = tokio::task::spawn_blocking(Instant::now);
        let starved = tokio::time::timeout(RETURN_BOUND, &mut fresh)
            .await
            .is_err();
        let (started, _) = counts();
        naive.stop();
        assert!(starved, "the fresh job got a thread: no leak shown");
        assert_eq!(
            started, POOL,
            "the aborted naive closures kept exactly the pool's threads"
        );

        tokio::time::timeout(RELEASE, fresh)
            .await
            .expect("the fresh job ran once the naive closures were released")
            .expect("the fresh job did not panic");
        for task in tasks {
            assert!(task.await.expect_err("aborted").is_cancelled());
        }
    });
    // Aborting their tasks did not keep the 196 queued naive closures from running later: each
    // starts once a thread frees up, the last ones shortly after the fresh job's.
    assert!(
        wait_until(RELEASE, || naive.started() == JOBS),
        "only {} of the {JOBS} naive closures ever started",
        naive.started()
    );
}
