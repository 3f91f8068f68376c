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

use common::{
    CANCEL_TO_RETURN, NAIVE_WATCH, Probe, RELEASE, StopFlag, exclusive, report, slices_until,
    wait_until_async,
};
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

/// How many closures have started, and how many jobs have been handed to the pool.
fn counts(probes: &[Probe], queued: &AtomicUsize) -> (usize, usize) {
    let started = probes.iter().filter(|probe| probe.started()).count();
    (started, queued.load(Ordering::SeqCst))
}

#[test]
fn cancelled_jobs_free_a_pool_of_4_for_a_fresh_job_within_1s() {
    let _serial = exclusive();
    let runtime = small_pool_runtime();
    let probes: Vec<Probe> = (0..JOBS).map(|_| Probe::new()).collect();
    let queued = Arc::new(AtomicUsize::new(0));
    let (fresh_latency, mut times) = runtime.block_on(async {
        let tasks: Vec<_> = probes
            .iter()
            .map(|probe| {
                let probe = probe.clone();
                let queued = queued.clone();
                tokio::spawn(async move {
                    let job = tethered_tokio::spawn_native(move |token| {
                        probe.run_tethered(&token, || slices_until(|| token.is_cancelled()))
                    });
                    queued.fetch_add(1, Ordering::SeqCst);
                    job.await
                })
            })
            .collect();
        assert!(
            wait_until_async(ALL_QUEUED, || counts(&probes, &queued) == (POOL, JOBS)).await,
            "expected {POOL} running and {JOBS} queued, got {:?}",
            counts(&probes, &queued)
        );

        let cancelled_at = Instant::now();
        for (task, probe) in tasks.iter().zip(&probes) {
            probe.mark_cancel(cancelled_at);
            task.abort();
        }
        let fresh = tethered_tokio::spawn_native(|_token| Instant::now());
        let ran_at = tokio::time::timeout(CANCEL_TO_RETURN, fresh)
            .await
            .expect("the fresh job got no thread within 1 s")
            .expect("the fresh job ran");
        for task in tasks {
            assert!(task.await.expect_err("aborted").is_cancelled());
        }
        let times: Vec<Duration> = probes
            .iter()
            .filter(|probe| probe.started())
            .map(|probe| probe.assert_returned_in_time("pool exhaustion"))
            .collect();
        (ran_at - cancelled_at, times)
    });

    // `abort` is asynchronous: a queued job whose task a worker has not yet dropped can still
    // start on a freed thread, and then returns at once. Most never run their closure.
    let never_ran = probes.iter().filter(|probe| !probe.started()).count();
    eprintln!(
        "[tethered-tokio] pool exhaustion: fresh job ran {fresh_latency:?} after {JOBS} jobs \
         were cancelled; {never_ran} of the {} queued jobs never ran their closure",
        JOBS - POOL
    );
    report("pool exhaustion (every closure that ran)", &mut times);
    // The other test of this binary is naive: no tethered job of another test is in flight.
    tethered::testing::assert_all_returned(RELEASE);
}

#[test]
fn naive_spawn_blocking_starves_a_fresh_job_until_released() {
    let _serial = exclusive();
    let runtime = small_pool_runtime();
    let stop = StopFlag::new();
    let probes: Vec<Probe> = (0..JOBS).map(|_| Probe::new()).collect();
    let queued = Arc::new(AtomicUsize::new(0));
    runtime.block_on(async {
        let tasks: Vec<_> = probes
            .iter()
            .map(|probe| {
                let probe = probe.clone();
                let queued = queued.clone();
                let stop = stop.signal();
                tokio::spawn(async move {
                    let naive = tokio::task::spawn_blocking(move || {
                        probe.run_naive(|| slices_until(|| stop.is_set()))
                    });
                    queued.fetch_add(1, Ordering::SeqCst);
                    naive.await
                })
            })
            .collect();
        assert!(
            wait_until_async(ALL_QUEUED, || counts(&probes, &queued) == (POOL, JOBS)).await,
            "expected {POOL} running and {JOBS} queued, got {:?}",
            counts(&probes, &queued)
        );
        for task in &tasks {
            task.abort();
        }

        let mut fresh = tokio::task::spawn_blocking(Instant::now);
        let starved = tokio::time::timeout(NAIVE_WATCH, &mut fresh).await.is_err();
        let (started, _) = counts(&probes, &queued);
        stop.set();
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
    // Aborting their tasks did not keep the 196 queued naive closures from running later.
    assert!(probes.iter().all(Probe::started));
}
