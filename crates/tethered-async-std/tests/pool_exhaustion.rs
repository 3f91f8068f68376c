//! Scenario 5: 200 cancelled jobs on a 4-thread pool must leave room for a fresh job.
//!
//! async-std's `spawn_blocking` runs on the `blocking` pool, which reads `BLOCKING_MAX_THREADS` once, when its pool starts, so the variable must be
//! in the environment before anything in the process touches the pool. Setting it from a test
//! (`std::env::set_var`) is `unsafe` in edition 2024 and forbidden here, and would race with
//! other tests anyway. So this binary holds a single test, which re-runs itself in a child
//! process whose environment has `BLOCKING_MAX_THREADS=4` from its first instruction; the
//! parent only watches the child, with a time limit, and kills it if it hangs.

mod common;

use std::io::Read;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use async_std::task;
use common::{Naive, PATIENCE, Probe, RETURN_BOUND, RUNTIME, bounded, wait_for};

const POOL_THREADS: usize = 4;
const JOBS: usize = 200;
const TEST_NAME: &str = "a_fresh_job_runs_within_1s_after_200_cancelled_jobs_on_a_4_thread_pool";

#[test]
fn a_fresh_job_runs_within_1s_after_200_cancelled_jobs_on_a_4_thread_pool() {
    match std::env::var("BLOCKING_MAX_THREADS") {
        Err(_) => run_in_child_with_small_pool(),
        Ok(threads) => {
            assert_eq!(
                threads,
                POOL_THREADS.to_string(),
                "this test needs BLOCKING_MAX_THREADS={POOL_THREADS} (or unset)"
            );
            bounded("the pool-exhaustion scenario", PATIENCE, exhaust_the_pool);
        }
    }
}

fn run_in_child_with_small_pool() {
    let mut child = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([TEST_NAME, "--exact", "--nocapture", "--test-threads=1"])
        .env("BLOCKING_MAX_THREADS", POOL_THREADS.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("re-run this test binary");
    let stdout = drain(child.stdout.take().expect("piped"));
    let stderr = drain(child.stderr.take().expect("piped"));
    let limit = PATIENCE * 2;
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll the child") {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(10));
    };
    let stderr = stderr.join().expect("read the child's stderr");
    let stdout = stdout.join().expect("read the child's stdout");
    // The child's timing lines, shown like this test's own output (with `--nocapture`).
    eprint!("{stderr}");
    match status {
        Some(status) => assert!(
            status.success(),
            "the scenario failed in the child process ({status}):\n{stdout}"
        ),
        None => panic!("watchdog: the child process did not finish within {limit:?}"),
    }
}

/// Reads a child's pipe to the end on a thread of its own, so the child never blocks on it.
fn drain(mut pipe: impl Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text);
        text
    })
}

fn exhaust_the_pool() {
    // tethered: 200 jobs, 4 of them running; dropping the handles cancels all of them.
    let probes: Vec<_> = (0..JOBS).map(|_| Probe::new()).collect();
    let jobs: Vec<_> = probes
        .iter()
        .map(|probe| {
            let job = tethered_async_std::spawn_native(probe.spinning_job());
            probe.watch(&job);
            job
        })
        .collect();
    wait_for("the pool to fill", PATIENCE, || {
        tethered::stats().running == POOL_THREADS
    });
    thread::sleep(Duration::from_millis(50));
    assert_eq!(
        tethered::stats().running,
        POOL_THREADS,
        "the pool is limited to {POOL_THREADS} threads"
    );
    drop(jobs);
    let submitted = Instant::now();
    let fresh = tethered_async_std::spawn_native(|_token| Instant::now());
    let ran_at = task::block_on(fresh).expect("the fresh job ran");
    let waited = ran_at - submitted;
    eprintln!("[{RUNTIME}] pool exhaustion: the fresh job started {waited:?} after 200 cancels");
    assert!(
        waited <= RETURN_BOUND,
        "the fresh job waited {waited:?} for a thread"
    );
    let started: Vec<_> = probes.iter().filter(|probe| probe.has_started()).collect();
    common::report(
        "pool exhaustion (the jobs that had started)",
        started
            .iter()
            .map(|probe| probe.cancel_to_return())
            .collect(),
    );
    tethered::testing::assert_all_returned(PATIENCE);

    // Naive: 200 plain `spawn_blocking` tasks, cancelled (`JoinHandle::cancel`, since dropping
    // the handle would only detach them); the 4 running closures keep the pool.
    let naive = Naive::new();
    let handles: Vec<_> = (0..JOBS)
        .map(|_| task::spawn_blocking(naive.spinning_job()))
        .collect();
    naive.wait_started(POOL_THREADS);
    task::block_on(async {
        for handle in handles {
            handle.cancel().await;
        }
    });
    let gave_up = Instant::now();
    let (done, fresh_ran) = std::sync::mpsc::channel();
    let fresh = task::spawn_blocking(move || {
        let _ = done.send(());
    });
    naive.assert_leaks(POOL_THREADS, gave_up, "pool exhaustion");
    assert!(
        fresh_ran.try_recv().is_err(),
        "with the pool held by leaked closures, the fresh job never gets a thread"
    );
    eprintln!(
        "[{RUNTIME}] pool exhaustion: naive: the fresh job still waits {:?} after the cancels",
        gave_up.elapsed()
    );
    naive.release();
    task::block_on(fresh);
    assert_eq!(
        naive.started(),
        POOL_THREADS,
        "the cancelled queued tasks never ran"
    );
}
