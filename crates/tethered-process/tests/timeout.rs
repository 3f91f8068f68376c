//! A busy child behind each runtime's `timeout`: the timeout cancels the job, and the child is
//! stopped by SIGTERM and reaped (gone from `/proc`, so no zombie) well within the grace. And
//! the two ways to time out and still get the reaped child's output: a timeout on `&mut job`,
//! then awaiting the job, and `ProcessJob::cancel_after`.

#![cfg(target_os = "linux")]
#![allow(
    clippy::result_large_err,
    reason = "the closures return what a `ProcessJob` resolves to"
)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{Proc, SLACK, busy, stopped, wait_until};
use tethered::{CancelReason, CancelToken, NativeError, Tethered};
use tethered_process::{Process, ProcessJob, ProcessOutput};

const GRACE: Duration = Duration::from_secs(2);
const PATIENCE: Duration = Duration::from_millis(100);

/// Spawns `command`, hands the job to `run_behind_timeout`, and checks that the timeout
/// cancelled it and that the child is gone within the grace and the slack.
fn stops_behind_timeout(
    command: Command,
    run_behind_timeout: impl FnOnce(ProcessJob) -> Result<ProcessOutput, NativeError<ProcessOutput>>,
) {
    let job = Process::new(command)
        .kill_after(GRACE)
        .spawn()
        .expect("sh starts");
    let child = Proc::of(job.pid().expect("started"));
    let token: CancelToken = job.token().clone();
    assert!(child.is_running());

    let result = run_behind_timeout(job);
    // The timeout answers at once while the child is still being stopped; only a waiter that
    // stopped and reaped it before the timeout looked again gives the output.
    assert!(
        matches!(
            result,
            Err(NativeError::Abandoned {
                reason: CancelReason::Timeout,
                grace: Duration::ZERO,
                ..
            }) | Err(NativeError::Cancelled {
                reason: CancelReason::Timeout,
                returned: Some(_),
                ..
            })
        ),
        "{result:?}"
    );
    assert_eq!(token.reason(), Some(CancelReason::Timeout));
    assert!(
        wait_until(GRACE + SLACK, || !child.exists()),
        "pid {} still exists (or is an unreaped zombie)",
        child.pid
    );
}

#[test]
fn tokio_timeout_stops_and_reaps_a_busy_child() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    stops_behind_timeout(busy(), |job| {
        runtime.block_on(async { job.timeout(PATIENCE).await })
    });
}

#[test]
fn smol_timeout_stops_and_reaps_a_busy_child() {
    stops_behind_timeout(busy(), |job| smol::block_on(job.timeout(PATIENCE)));
}

#[test]
fn async_std_timeout_stops_and_reaps_a_busy_child() {
    stops_behind_timeout(busy(), |job| {
        async_std::task::block_on(job.timeout(PATIENCE))
    });
}

#[test]
fn a_busy_child_behind_a_timeout_on_a_tokio_runtime_is_stopped() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let job = Process::new(busy())
        .kill_after(GRACE)
        .spawn()
        .expect("sh starts");
    let child = Proc::of(job.pid().expect("started"));
    let result = runtime.block_on(async { job.timeout(PATIENCE).await });
    let err = result.expect_err("the busy child never ends by itself");
    assert_eq!(err.cancel_reason(), Some(CancelReason::Timeout));
    assert!(wait_until(GRACE + SLACK, || !child.exists()));
}

#[test]
fn a_timeout_on_a_borrowed_job_answers_at_the_deadline_and_the_job_then_gives_the_reaped_output() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut job = Process::new(busy())
        .kill_after(GRACE)
        .spawn()
        .expect("sh starts");
    let child = Proc::of(job.pid().expect("started"));
    let output = runtime.block_on(async {
        match (&mut job).timeout(PATIENCE).await {
            // Answered at the deadline, the child still being stopped: the handle is still
            // ours, and awaiting it waits for the reap.
            Err(NativeError::Abandoned {
                reason: CancelReason::Timeout,
                grace,
                ..
            }) => {
                assert_eq!(grace, Duration::ZERO);
                stopped(CancelReason::Timeout, job.await)
            }
            // Stopped and reaped before the timeout looked again: the same stop, already.
            other => stopped(CancelReason::Timeout, other),
        }
    });
    assert!(output.ended.is_stopped(), "{output:?}");
    assert_eq!(output.cancel_reason, Some(CancelReason::Timeout));
    // Reaped before the job resolved: not even a zombie is left.
    assert!(!child.exists());
}

#[test]
fn cancel_after_stops_the_child_at_the_deadline_and_the_job_gives_the_reaped_output() {
    let job = Process::new(busy())
        .kill_after(GRACE)
        .spawn()
        .expect("sh starts");
    let child = Proc::of(job.pid().expect("started"));
    let token = job.token().clone();
    job.cancel_after(PATIENCE).expect("the timer runs");
    assert!(
        token.deadline().is_some(),
        "the deadline is the job token's"
    );
    let output = stopped(CancelReason::Timeout, job.join_blocking());
    assert!(output.ended.is_stopped(), "{output:?}");
    assert_eq!(output.cancel_reason, Some(CancelReason::Timeout));
    assert!(!child.exists());
}

#[test]
fn cancel_after_leaves_a_child_that_exits_first_alone() {
    let job = Process::new(common::sh("exit 5"))
        .spawn()
        .expect("sh starts");
    let token = job.token().clone();
    job.cancel_after(SLACK).expect("the timer runs");
    let output = job.join_blocking().expect("it exits by itself");
    assert!(output.ended.is_exited());
    assert_eq!(output.status().and_then(|status| status.code()), Some(5));
    assert!(!token.is_cancelled());
}

#[test]
fn smol_timeout_on_a_job_that_finished_first_returns_its_output() {
    let job = Process::new(common::sh("exit 4"))
        .spawn()
        .expect("sh starts");
    let output = smol::block_on(job.timeout(SLACK)).expect("it exits by itself");
    assert!(output.ended.is_exited());
    assert_eq!(output.status().and_then(|status| status.code()), Some(4));
}
