//! A child that ends by itself, and a child that cannot be started.

#![cfg(target_os = "linux")]

mod common;

use std::os::unix::process::ExitStatusExt;
use std::process::Command;
use std::time::Duration;

use common::{Proc, sh};
use tethered::{CancelReason, JobOptions, NativeError, SpawnError, Tethered};
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

/// A start error is a `SpawnError`, as from every entry point of the family: `Start`, with the
/// OS's error (its kind kept) naming the program.
#[test]
fn a_missing_program_is_a_spawn_error_at_once_naming_it() {
    let err = Process::new(Command::new("/no/such/program"))
        .spawn()
        .expect_err("nothing to run");
    let SpawnError::Start(io) = &err else {
        panic!("a start error: {err:?}");
    };
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    let chain = tethered::__private::error_chain(&err);
    assert!(chain.contains("/no/such/program"), "{chain}");
    assert!(chain.contains("No such file or directory"), "{chain}");
    // The same through `spawn_with`, whatever the options.
    let err = Process::new(Command::new("/no/such/program"))
        .spawn_with(
            JobOptions::new()
                .name("missing")
                .timeout(Duration::from_secs(5)),
        )
        .expect_err("nothing to run");
    assert!(matches!(err, SpawnError::Start(_)), "{err:?}");
}

#[test]
fn a_program_without_permission_is_the_io_error_at_once() {
    let path = std::env::temp_dir().join(format!("tethered-process-noexec-{}", std::process::id()));
    std::fs::write(&path, "#!/bin/sh\nexit 0\n").expect("a temp file");
    let err = Process::new(Command::new(&path))
        .spawn()
        .expect_err("not executable");
    let _ = std::fs::remove_file(&path);
    assert!(
        matches!(&err, SpawnError::Start(io) if io.kind() == std::io::ErrorKind::PermissionDenied),
        "{err:?}"
    );
}

/// A job cancelled before its child starts never starts it, as a closure never runs (the
/// core's table): a parent cancelled already, a zero timeout, a deadline already past. The
/// pool's turns read the same (`tests/pool.rs`).
#[test]
fn a_job_cancelled_before_its_child_starts_never_starts_it() {
    let parent = tethered::CancelSource::new();
    parent.cancel(CancelReason::Shutdown);
    let cases = [
        (
            JobOptions::new().child_of(&parent.token()),
            CancelReason::Shutdown,
        ),
        (
            JobOptions::new().timeout(Duration::ZERO),
            CancelReason::Timeout,
        ),
        (
            JobOptions::new().deadline(std::time::Instant::now() - Duration::from_secs(1)),
            CancelReason::Timeout,
        ),
    ];
    for (options, reason) in cases {
        // A child that would leave a mark if it ever ran.
        let mark = std::env::temp_dir().join(format!(
            "tethered-never-started-{}-{reason:?}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&mark);
        let job = Process::new(sh(&format!("touch {}", mark.display())))
            .spawn_with(options)
            .expect("a stopped handle, not an error");
        assert_eq!(job.pid(), None, "{reason:?}: no child was started");
        match job.join_blocking() {
            Err(NativeError::Cancelled {
                reason: seen,
                returned: None,
                ..
            }) => assert_eq!(seen, reason),
            other => panic!("{reason:?}: expected a stop before the start: {other:?}"),
        }
        std::thread::sleep(Duration::from_millis(50));
        assert!(!mark.exists(), "{reason:?}: the child ran");
    }
}
