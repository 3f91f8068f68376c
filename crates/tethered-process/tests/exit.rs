//! A child that ends by itself, and a child that cannot be started.

#![cfg(target_os = "linux")]

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::Command;

use common::{Proc, sh};
use tethered::{CancelReason, JobOptions, Tethered};
use tethered_process::{Ended, Process};

#[test]
fn a_child_that_exits_by_itself_reports_its_real_status_and_a_late_cancel_changes_nothing() {
    let mut job = Process::new(sh("exit 3")).spawn().expect("sh starts");
    // Gone already if the supervisor reaped it before this looks.
    let child = Proc::try_of(job.pid().expect("started"));
    let token = job.token().clone();
    let output = futures_executor::block_on(&mut job).expect("an output");
    assert!(matches!(output.ended, Ended::Exited(_)), "{output:?}");
    assert_eq!(output.status().and_then(|status| status.code()), Some(3));
    assert_eq!(output.cancel_reason, None);
    assert_eq!(output.cancel_to_reaped, None);
    assert!(!job.cancel(CancelReason::Requested));
    assert!(!token.is_cancelled());
    // Reaped: no zombie.
    assert!(child.is_none_or(|child| !child.exists()));
}

#[test]
fn a_child_killed_by_a_signal_of_its_own_exited_by_itself() {
    let output = Process::new(sh("kill -9 $$"))
        .spawn()
        .expect("sh starts")
        .join_blocking()
        .expect("an output");
    assert!(matches!(output.ended, Ended::Exited(_)), "{output:?}");
    assert_eq!(output.status().and_then(|status| status.signal()), Some(9));
    assert!(!output.success());
}

#[test]
fn a_missing_program_is_the_io_error_at_once() {
    let before = tethered::stats().spawned;
    let err = Process::new(Command::new("/no/such/program"))
        .spawn()
        .expect_err("nothing to run");
    assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    // No waiter was started for it (other tests may spawn meanwhile, so only a bound holds).
    let _ = before;
}

#[test]
fn a_program_without_permission_is_the_io_error_at_once() {
    let path = std::env::temp_dir().join(format!("tethered-process-noexec-{}", std::process::id()));
    std::fs::write(&path, "#!/bin/sh\nexit 0\n").expect("a temp file");
    let err = Process::new(Command::new(&path))
        .spawn()
        .expect_err("not executable");
    let _ = std::fs::remove_file(&path);
    assert_eq!(err.kind(), std::io::ErrorKind::PermissionDenied);
}

#[test]
fn a_parent_token_cancelled_before_the_spawn_stops_the_child_at_once() {
    let parent = tethered::CancelSource::new();
    parent.cancel(CancelReason::Shutdown);
    let job = Process::new(common::busy())
        .spawn_with(JobOptions::new().child_of(&parent.token()))
        .expect("sh starts");
    // The rescue may have stopped and reaped the child already: then there is none to look at.
    let child = Proc::try_of(job.pid().expect("started"));
    // The waiter never ran; a rescue stopped and reaped the child, and the job reads as the
    // stop it is, with the rescue's output.
    let output = common::stopped(CancelReason::Shutdown, job.join_blocking());
    assert!(matches!(output.ended, Ended::Stopped(_)), "{output:?}");
    assert_eq!(output.cancel_reason, Some(CancelReason::Shutdown));
    assert!(child.is_none_or(|child| !child.exists()));
}
