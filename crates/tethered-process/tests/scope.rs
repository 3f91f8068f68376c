//! Jobs in a `NativeScope`: its limit bounds live children (the others wait unspawned), a job
//! cancelled while it waits never starts its child, and cancelling the scope stops them all.

#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use common::{Proc, SLACK, busy, sh, stopped, wait_until};
use std::num::NonZeroUsize;
use tethered::{CancelReason, JobOptions, NativeError, NativeScope, Tethered};
use tethered_process::{Ended, Process};

/// Children of this process whose command line holds `marker`, zombies included.
fn children_marked(marker: &str) -> Vec<u32> {
    common::children()
        .into_iter()
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline"))
                .is_ok_and(|cmdline| String::from_utf8_lossy(&cmdline).contains(marker))
        })
        .collect()
}

#[test]
fn the_scopes_limit_bounds_live_children_and_the_others_wait_unspawned() {
    // A marker no other test uses, so that only these children carry it.
    let marker = "limit-marker-4417";
    let scope = NativeScope::new().with_max_running(NonZeroUsize::new(2).unwrap());
    let jobs: Vec<_> = (0..6)
        .map(|_| {
            // Long enough that the first two are still alive when the test looks, however slow
            // the machine is at starting the six.
            Process::new(sh(&format!("sleep 1 # {marker}")))
                .spawn_with(JobOptions::new().in_scope(&scope))
                .expect("sh starts")
        })
        .collect();
    // Two started on this thread, at once; four wait with no process behind them.
    let pids: Vec<_> = jobs.iter().map(|job| job.pid()).collect();
    assert!(pids[..2].iter().all(Option::is_some), "{pids:?}");
    assert!(pids[2..].iter().all(Option::is_none), "{pids:?}");
    let counts = scope.stats();
    assert_eq!((counts.running, counts.queued), (2, 4));
    // Never more than two alive while they run through, in turn.
    let mut most = 0;
    assert!(wait_until(SLACK, || {
        most = most.max(children_marked(marker).len());
        scope.is_empty()
    }));
    assert!(
        most <= 2,
        "{most} children of a scope limited to 2 were alive at once"
    );
    for job in jobs {
        let output = job.join_blocking().expect("each ran to its end");
        assert!(output.success(), "{output:?}");
    }
}

#[test]
fn a_job_cancelled_while_it_waits_for_a_slot_never_starts_its_child() {
    let marker = "never-started-8812";
    let scope = NativeScope::new().with_max_running(NonZeroUsize::new(1).unwrap());
    let first = Process::new(busy())
        .spawn_with(JobOptions::new().in_scope(&scope))
        .expect("sh starts");
    let waiting = Process::new(sh(&format!("sleep 60 # {marker}")))
        .spawn_with(JobOptions::new().in_scope(&scope))
        .expect("queued");
    assert_eq!(waiting.pid(), None);
    let started = waiting.started();
    assert!(waiting.cancel(CancelReason::Timeout));
    assert_eq!(futures_executor::block_on(started), None);
    match waiting.join_blocking() {
        Err(NativeError::Cancelled {
            reason: CancelReason::Timeout,
            returned: None,
            ..
        }) => {}
        other => panic!("expected a stop with nothing returned: {other:?}"),
    }
    // The slot frees: still no child of the cancelled job starts.
    stopped(
        CancelReason::Requested,
        futures_executor::block_on(first.cancel_and_join()),
    );
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(children_marked(marker), Vec::<u32>::new());
    assert!(scope.is_empty());
}

#[test]
fn a_waiting_job_starts_when_a_slot_frees_and_then_has_its_pid_and_pipes() {
    let scope = NativeScope::new().with_max_running(NonZeroUsize::new(1).unwrap());
    let first = Process::new(sh("sleep 0.5"))
        .spawn_with(JobOptions::new().in_scope(&scope))
        .expect("sh starts");
    let mut cat = std::process::Command::new("cat");
    cat.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut second = Process::new(cat)
        .capture_stdout(false)
        .spawn_with(JobOptions::new().in_scope(&scope))
        .expect("queued");
    assert!(
        second.take_stdin().is_none(),
        "no pipe before the child exists"
    );
    let pid = futures_executor::block_on(second.started()).expect("started once the slot freed");
    assert_eq!(second.pid(), Some(pid));
    let mut stdin = second.take_stdin().expect("the piped stdin");
    let mut stdout = second.take_stdout().expect("the piped stdout");
    use std::io::{Read, Write};
    stdin.write_all(b"hello").expect("cat reads");
    drop(stdin);
    let mut echoed = String::new();
    stdout.read_to_string(&mut echoed).expect("cat writes");
    assert_eq!(echoed, "hello");
    assert!(second.join_blocking().expect("cat ends").success());
    assert!(first.join_blocking().expect("sleep ends").success());
}

#[test]
fn a_waiting_child_that_cannot_start_resolves_to_never_started() {
    let scope = NativeScope::new().with_max_running(NonZeroUsize::new(1).unwrap());
    let first = Process::new(sh("sleep 1"))
        .spawn_with(JobOptions::new().in_scope(&scope))
        .expect("sh starts");
    let missing = Process::new(std::process::Command::new("/no/such/program"))
        .spawn_with(JobOptions::new().in_scope(&scope))
        .expect("queued: its start comes later");
    let output = missing.join_blocking().expect("the job ran its start");
    assert!(
        matches!(&output.ended, Ended::NeverStarted(tethered::SpawnError::Start(err)) if err.kind() == std::io::ErrorKind::NotFound),
        "{output:?}"
    );
    assert_eq!(output.pid, None);
    first.join_blocking().expect("sleep ends");
    // A start that fails at once is the spawn's error, as for `spawn`.
    let err = Process::new(std::process::Command::new("/no/such/program"))
        .spawn_with(JobOptions::new().in_scope(&scope))
        .unwrap_err();
    assert!(
        matches!(&err, tethered::SpawnError::Start(io) if io.kind() == std::io::ErrorKind::NotFound),
        "{err:?}"
    );
    assert!(scope.is_empty());
}

#[test]
fn cancelling_the_scope_stops_every_child() {
    let scope = NativeScope::new();
    let jobs: Vec<_> = (0..4)
        .map(|_| {
            Process::new(busy())
                .kill_after(Duration::from_secs(2))
                .spawn_with(JobOptions::new().in_scope(&scope))
                .expect("sh starts")
        })
        .collect();
    let children: Vec<Proc> = jobs
        .iter()
        .map(|job| Proc::of(job.pid().expect("started")))
        .collect();
    scope.cancel_all(CancelReason::Shutdown);
    let report = scope.shutdown_blocking(SLACK);
    assert!(report.is_clean(), "{report:?}");
    for job in jobs {
        let output = stopped(CancelReason::Shutdown, job.join_blocking());
        assert!(matches!(output.ended, Ended::Stopped(_)), "{output:?}");
        assert_eq!(output.cancel_reason, Some(CancelReason::Shutdown));
    }
    assert!(children.iter().all(|child| !child.exists()));
}
