//! Jobs in a `NativeScope`, and waiters that never run: a child whose waiter was cancelled
//! while queued is still stopped and reaped, by a rescue, and the handle waits for that.

#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use common::{Proc, SLACK, busy, stopped, wait_until};
use tethered::{CancelReason, NativeScope};
use tethered_process::{Ended, Process};

#[test]
fn a_waiter_cancelled_while_queued_is_rescued_and_the_handle_waits_for_the_reap() {
    let scope = NativeScope::new().with_max_running(1);
    let first = Process::new(busy()).spawn_in(&scope).expect("sh starts");
    // The scope's only slot is taken: this waiter waits in the scope's queue.
    let queued = Process::new(busy()).spawn_in(&scope).expect("sh starts");
    let child = Proc::of(queued.pid());
    // The job reads as the stop it is, with the rescue's output.
    let output = stopped(
        CancelReason::Requested,
        futures_executor::block_on(queued.cancel_and_join()),
    );
    assert!(matches!(output.ended, Ended::Stopped(_)), "{output:?}");
    assert_eq!(output.cancel_reason, Some(CancelReason::Requested));
    assert!(!child.exists());
    // Stopped and reaped before the test ends: a test binary that exits with a child still
    // being stopped would orphan it.
    stopped(
        CancelReason::Requested,
        futures_executor::block_on(first.cancel_and_join()),
    );
}

#[test]
fn a_queued_waiter_whose_handle_is_dropped_is_rescued_all_the_same() {
    let scope = NativeScope::new().with_max_running(1);
    let first = Process::new(busy()).spawn_in(&scope).expect("sh starts");
    let queued = Process::new(busy()).spawn_in(&scope).expect("sh starts");
    let child = Proc::of(queued.pid());
    drop(queued);
    assert!(
        wait_until(SLACK, || !child.exists()),
        "the dropped job's child {} is still there",
        child.pid
    );
    // Stopped and reaped before the test ends: a test binary that exits with a child still
    // being stopped would orphan it.
    stopped(
        CancelReason::Requested,
        futures_executor::block_on(first.cancel_and_join()),
    );
}

#[test]
fn cancelling_the_scope_stops_every_child() {
    let scope = NativeScope::new();
    let jobs: Vec<_> = (0..4)
        .map(|_| {
            Process::new(busy())
                .grace(Duration::from_secs(2))
                .spawn_in(&scope)
                .expect("sh starts")
        })
        .collect();
    let children: Vec<Proc> = jobs.iter().map(|job| Proc::of(job.pid())).collect();
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
