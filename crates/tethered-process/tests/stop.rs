//! How a cancelled child is stopped: the polite signal, the grace, SIGKILL, and the reap.

#![cfg(target_os = "linux")]

mod common;

use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use common::{Proc, SLACK, busy, ignores_term, sh_ready, stopped, wait_ready, wait_until};
use tethered::{CancelReason, Tethered};
use tethered_process::{Ended, Process, ProcessOutput, StopSignal};

#[test]
fn a_child_that_stops_on_sigterm_ends_as_stopped_and_is_reaped() {
    let job = Process::new(busy()).spawn().expect("sh starts");
    let child = Proc::of(job.pid().expect("started"));
    let output = job.cancel_and_join().stopped_blocking();
    assert!(matches!(output.ended, Ended::Stopped(_)), "{output:?}");
    assert_eq!(output.status().and_then(|status| status.signal()), Some(15));
    assert_eq!(output.cancel_reason, Some(CancelReason::Requested));
    assert!(output.cancel_to_reaped.is_some());
    // Reaped before the job resolved: not even a zombie is left.
    assert!(!child.exists());
}

#[test]
fn a_child_that_ignores_sigterm_is_killed_after_the_grace_not_before() {
    let grace = Duration::from_millis(500);
    let mut job = Process::new(sh_ready("trap '' TERM", "while :; do :; done"))
        .kill_after(grace)
        .capture_stdout(false)
        .spawn()
        .expect("sh starts");
    let child = Proc::of(job.pid().expect("started"));
    wait_ready(&mut job); // the trap is set
    let cancelled = Instant::now();
    assert!(job.cancel(CancelReason::Timeout));
    std::thread::sleep(grace / 2);
    // SIGTERM is ignored and SIGKILL is due only at the end of the grace.
    assert!(child.is_running(), "killed before the grace ended");
    let output = stopped(CancelReason::Timeout, job.join_blocking());
    let took = cancelled.elapsed();
    assert!(matches!(output.ended, Ended::Killed(_)), "{output:?}");
    assert_eq!(output.status().and_then(|status| status.signal()), Some(9));
    assert!(took >= grace, "reaped {took:?} after the cancel");
    assert!(took < grace + SLACK, "reaped {took:?} after the cancel");
    assert!(
        output
            .cancel_to_reaped
            .is_some_and(|waited| waited >= grace)
    );
    assert_eq!(output.cancel_reason, Some(CancelReason::Timeout));
    assert!(!child.exists());
}

#[test]
fn a_zero_grace_kills_at_once() {
    let job = Process::new(ignores_term())
        .kill_after(Duration::ZERO)
        .spawn()
        .expect("sh starts");
    let output = job.cancel_and_join().stopped_blocking();
    assert!(matches!(output.ended, Ended::Killed(_)), "{output:?}");
    assert_eq!(output.status().and_then(|status| status.signal()), Some(9));
}

#[test]
fn a_grace_of_duration_max_never_escalates() {
    // The child leaves by itself some time after the polite signal: it is never killed.
    let mut job = Process::new(sh_ready(
        "trap 'sleep 0.3; exit 0' TERM",
        "while :; do sleep 0.01; done",
    ))
    .kill_after(Duration::MAX)
    .capture_stdout(false)
    .spawn()
    .expect("sh starts");
    wait_ready(&mut job);
    let output = job.cancel_and_join().stopped_blocking();
    assert!(matches!(output.ended, Ended::Stopped(_)), "{output:?}");
    assert_eq!(output.status().and_then(|status| status.code()), Some(0));
}

/// Whether this process ignores SIGINT (as a command started with `&` by a shell without job
/// control does): its children inherit that, and a shell cannot trap a signal it was started
/// ignoring.
fn sigint_ignored() -> bool {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("SigIgn:"))
        .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .is_some_and(|mask| mask & (1 << (SIGINT - 1)) != 0)
}

/// SIGINT's number on Linux.
const SIGINT: u32 = 2;

#[test]
fn the_polite_signal_can_be_sigint() {
    assert!(
        !sigint_ignored(),
        "this test process ignores SIGINT (SigIgn in /proc/self/status; a command started \
         with `&` by a shell without job control does), so its child inherits the ignore and \
         cannot trap SIGINT: run the tests with SIGINT at its default"
    );
    let mut job = Process::new(sh_ready(
        "trap 'exit 42' INT",
        "while :; do sleep 0.01; done",
    ))
    .polite_signal(StopSignal::Int)
    .capture_stdout(false)
    .spawn()
    .expect("sh starts");
    wait_ready(&mut job);
    let output = job.cancel_and_join().stopped_blocking();
    assert!(matches!(output.ended, Ended::Stopped(_)), "{output:?}");
    assert_eq!(output.status().and_then(|status| status.code()), Some(42));
}

#[test]
fn a_stopped_child_gets_sigcont_and_acts_on_the_polite_signal() {
    let job = Process::new(busy()).spawn().expect("sh starts");
    let child = Proc::of(job.pid().expect("started"));
    // Stop it the way Ctrl-Z would; SIGTERM alone would stay pending.
    let stopped = std::process::Command::new("kill")
        .args(["-STOP", &child.pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(stopped.success());
    assert!(wait_until(SLACK, || common::stat(child.pid)
        .is_some_and(|stat| stat.state == 'T')));
    let output = job.cancel_and_join().stopped_blocking();
    assert!(matches!(output.ended, Ended::Stopped(_)), "{output:?}");
}

#[test]
fn dropping_the_job_cancels_with_dropped_and_reaps_the_child() {
    let job = Process::new(busy()).spawn().expect("sh starts");
    let child = Proc::of(job.pid().expect("started"));
    let token = job.token().clone();
    drop(job);
    assert_eq!(token.reason(), Some(CancelReason::Dropped));
    assert!(wait_until(SLACK, || !child.exists()));
}

/// Blocks on a `cancel_and_join` future, which resolves to the stop with the reaped child's
/// output.
trait BlockOn {
    fn stopped_blocking(self) -> ProcessOutput;
}

impl<F> BlockOn for F
where
    F: std::future::Future<Output = Result<ProcessOutput, tethered::NativeError<ProcessOutput>>>,
{
    #[track_caller]
    fn stopped_blocking(self) -> ProcessOutput {
        stopped(CancelReason::Requested, futures_executor::block_on(self))
    }
}
