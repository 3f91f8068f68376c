//! Scenario 5: 200 cancelled jobs on a 4-thread pool must leave room for a fresh job.
//!
//! The `blocking` pool (smol's `unblock`, async-std's `spawn_blocking`) reads
//! `BLOCKING_MAX_THREADS` once, when it starts, so the variable must be in the environment
//! before anything in the process touches the pool. Setting it from a test
//! (`std::env::set_var`) is `unsafe` in edition 2024 and forbidden here, and would race with
//! other tests anyway. So the test re-runs itself in a child process whose environment has
//! `BLOCKING_MAX_THREADS=4` from its first instruction; the parent only watches the child, with
//! a time limit, and kills it if it hangs. The test must be alone in its binary.

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::{Naive, PATIENCE, Probe, RETURN_BOUND, Runtime, bounded, report, wait_for};

const POOL_THREADS: usize = 4;
const JOBS: usize = 200;

/// After 200 tethered jobs on a pool of 4 threads are cancelled, a fresh job gets a thread
/// within [`RETURN_BOUND`]; after 200 naive ones, the fresh job waits until the test releases
/// the leaked closures. `test_name` is the calling test's name, which the child process runs.
pub fn a_fresh_job_runs_after_200_cancelled_jobs<R: Runtime>(test_name: &str) {
    match std::env::var("BLOCKING_MAX_THREADS") {
        Err(_) => run_in_child_with_small_pool(test_name),
        Ok(threads) => {
            assert_eq!(
                threads,
                POOL_THREADS.to_string(),
                "this test needs BLOCKING_MAX_THREADS={POOL_THREADS} (or unset)"
            );
            bounded(
                "the pool-exhaustion scenario",
                PATIENCE,
                exhaust_the_pool::<R>,
            );
        }
    }
}

fn run_in_child_with_small_pool(test_name: &str) {
    let mut child = Command::new(std::env::current_exe().expect("the test binary's path"))
        .args([test_name, "--exact", "--nocapture", "--test-threads=1"])
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

fn exhaust_the_pool<R: Runtime>() {
    // tethered: 200 jobs, 4 of them running; dropping the handles cancels all of them.
    let probes: Vec<_> = (0..JOBS).map(|_| Probe::new()).collect();
    let jobs: Vec<_> = probes
        .iter()
        .map(|probe| R::spawn_native(probe.spinning_job()))
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
    let fresh = R::spawn_native(|_token| Instant::now());
    let ran_at = R::block_on(fresh).expect("the fresh job ran");
    let waited = ran_at - submitted;
    eprintln!(
        "[{}] pool exhaustion: the fresh job started {waited:?} after 200 cancels",
        R::NAME
    );
    assert!(
        waited <= RETURN_BOUND,
        "the fresh job waited {waited:?} for a thread"
    );
    report(
        R::NAME,
        "pool exhaustion (the jobs that had started)",
        probes
            .iter()
            .filter(|probe| probe.started())
            .map(Probe::cancel_to_return),
    );
    tethered::testing::assert_all_returned(PATIENCE);

    // Naive: 200 plain blocking tasks, given up on the runtime's way; the 4 running closures
    // keep the pool.
    let naive = Naive::new();
    let tasks: Vec<_> = (0..JOBS)
        .map(|_| R::spawn_blocking(naive.spinning_job()))
        .collect();
    naive.wait_started(POOL_THREADS);
    R::block_on(async {
        for task in tasks {
            R::abandon(task).await;
        }
    });
    let gave_up = Instant::now();
    let (done, fresh_ran) = mpsc::channel();
    let fresh = R::spawn_blocking(move || {
        let _ = done.send(());
    });
    naive.assert_leaks(R::NAME, "pool exhaustion", POOL_THREADS, gave_up);
    assert!(
        fresh_ran.try_recv().is_err(),
        "with the pool held by leaked closures, the fresh job never gets a thread"
    );
    eprintln!(
        "[{}] pool exhaustion: naive: the fresh job still waits {:?} after the cancels",
        R::NAME,
        gave_up.elapsed()
    );
    naive.release();
    R::block_on(fresh);
    assert_eq!(
        naive.started(),
        POOL_THREADS,
        "the abandoned queued tasks never ran"
    );
}
