//! How long a cancel takes to make a child gone (reaped, so not even a zombie): for a busy
//! child that stops on SIGTERM, and for one that ignores it and waits for SIGKILL.
//!
//! Prints the median and the worst of 20 runs each:
//! `cargo test -p tethered-process --release --test cancel_to_gone -- --nocapture`

#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use common::{Proc, SLACK, busy, median_and_worst, sh_ready, stopped, wait_ready};
use tethered::{CancelReason, Tethered};
use tethered_process::{Ended, Process, ProcessJob};

const RUNS: usize = 20;
const GRACE: Duration = Duration::from_millis(200);

/// Cancels `job` and returns how long until it was reaped.
fn cancel_to_reaped(job: ProcessJob) -> (Duration, Ended) {
    let child = Proc::of(job.pid().expect("started"));
    let cancelled = Instant::now();
    assert!(job.cancel(CancelReason::Requested));
    let output = stopped(CancelReason::Requested, job.join_blocking());
    let took = cancelled.elapsed();
    assert!(!child.exists(), "reaped means gone from /proc");
    (took, output.ended)
}

#[test]
fn cancel_to_gone_times() {
    let mut busy_times = Vec::new();
    for _ in 0..RUNS {
        let job = Process::new(busy())
            .kill_after(GRACE)
            .spawn()
            .expect("sh starts");
        // Let it get going: a child still being exec'd is not what we measure.
        std::thread::sleep(Duration::from_millis(20));
        let (took, ended) = cancel_to_reaped(job);
        assert!(ended.is_stopped(), "{ended:?}");
        busy_times.push(took);
    }
    let mut stubborn_times = Vec::new();
    for _ in 0..RUNS {
        let mut job = Process::new(sh_ready("trap '' TERM", "while :; do :; done"))
            .kill_after(GRACE)
            .capture_stdout(false)
            .spawn()
            .expect("sh starts");
        wait_ready(&mut job);
        let (took, ended) = cancel_to_reaped(job);
        assert!(ended.is_killed(), "{ended:?}");
        assert!(
            took >= GRACE,
            "killed {took:?} after the cancel, before the grace"
        );
        stubborn_times.push(took);
    }
    let (busy_median, busy_worst) = median_and_worst(&mut busy_times);
    let (stubborn_median, stubborn_worst) = median_and_worst(&mut stubborn_times);
    println!(
        "busy child, stops on SIGTERM:     median {busy_median:?}, worst {busy_worst:?} ({RUNS} runs)"
    );
    println!(
        "ignores SIGTERM, grace {GRACE:?}: median {stubborn_median:?}, worst {stubborn_worst:?} \
         ({RUNS} runs; beyond the grace: median {:?}, worst {:?})",
        stubborn_median - GRACE,
        stubborn_worst - GRACE
    );
    assert!(busy_worst < SLACK);
    assert!(stubborn_worst < GRACE + SLACK);
}
