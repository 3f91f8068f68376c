//! A busy child behind each runtime's `timeout`: the timeout cancels the job, and the child is
//! stopped by SIGTERM and reaped (gone from `/proc`, so no zombie) well within the grace.

#![cfg(target_os = "linux")]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{Proc, SLACK, busy, wait_until};
use tethered::{CancelReason, CancelToken, NativeError};
use tethered_process::{Process, ProcessJob, ProcessOutput};

const GRACE: Duration = Duration::from_secs(2);
const PATIENCE: Duration = Duration::from_millis(100);

/// Spawns `command`, hands the job to `run_behind_timeout`, and checks that the timeout
/// cancelled it and that the child is gone within the grace and the slack.
fn stops_behind_timeout(
    command: Command,
    run_behind_timeout: impl FnOnce(ProcessJob) -> Result<ProcessOutput, NativeError>,
) {
    let job = Process::new(command)
        .grace(GRACE)
        .spawn()
        .expect("sh starts");
    let child = Proc::of(job.pid());
    let token: CancelToken = job.token();
    assert!(child.is_running());

    let result = run_behind_timeout(job);
    assert!(
        matches!(result, Err(NativeError::Cancelled(CancelReason::Timeout))),
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
        runtime.block_on(async { tethered_tokio::timeout(PATIENCE, job).await })
    });
}

#[test]
fn smol_timeout_stops_and_reaps_a_busy_child() {
    stops_behind_timeout(busy(), |job| {
        smol::block_on(tethered_smol::timeout(PATIENCE, job))
    });
}

#[test]
fn async_std_timeout_stops_and_reaps_a_busy_child() {
    stops_behind_timeout(busy(), |job| {
        async_std::task::block_on(tethered_async_std::timeout(PATIENCE, job))
    });
}

#[test]
fn waiter_on_the_tokio_blocking_pool_stops_a_busy_child_behind_a_timeout() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let job = runtime.block_on(async {
        Process::new(busy())
            .grace(GRACE)
            .spawn_on(&tethered_tokio::TokioSpawner::current())
            .expect("sh starts")
    });
    let child = Proc::of(job.pid());
    let result = runtime.block_on(async { tethered_tokio::timeout(PATIENCE, job).await });
    assert!(result.is_err(), "{result:?}");
    assert!(wait_until(GRACE + SLACK, || !child.exists()));
}

#[test]
fn smol_timeout_on_a_job_that_finished_first_returns_its_output() {
    let job = Process::new(common::sh("exit 4"))
        .spawn()
        .expect("sh starts");
    let output = smol::block_on(tethered_smol::timeout(SLACK, job)).expect("it exits by itself");
    assert!(output.ended.is_exited());
    assert_eq!(output.status().and_then(|status| status.code()), Some(4));
}
