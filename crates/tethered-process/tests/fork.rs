//! After `fork()` (gunicorn's preload, `multiprocessing`'s fork, a daemonising service) the
//! supervisor thread, the timer thread and `ThreadSpawner`'s idle threads do not exist in the
//! child. A child that starts and cancels a child process, arms a deadline, or starts a job on
//! a thread must get working machinery of its own, not a silent hang. Each test forks for real,
//! after the threads ran in the parent.

#![cfg(unix)]

mod common;

use std::process::Command;
use std::time::Duration;

use tethered::{AbortableNative, CancelReason, CancelSource, Tethered};
use tethered_process::Process;
use tethered_test_support::in_forked_child;

/// Starts the supervisor and the timer in this (the parent) process.
fn warm_up_the_parent() {
    let mut sleep = Command::new("sleep");
    sleep.arg("30");
    let job = Process::new(sleep).spawn().expect("sleep starts");
    job.cancel_after(Duration::from_millis(5))
        .expect("the timer starts");
    let stopped = job.join_blocking().unwrap_err();
    assert_eq!(stopped.cancel_reason(), Some(CancelReason::Timeout));
}

/// 0 if the check passed, else the number of the check that failed.
fn code(checks: &[bool]) -> i32 {
    checks
        .iter()
        .position(|ok| !ok)
        .map_or(0, |failed| i32::try_from(failed).unwrap_or(99) + 1)
}

#[test]
fn a_forked_child_spawns_cancels_and_reaps_a_process_of_its_own() {
    warm_up_the_parent();
    let code = in_forked_child(Duration::from_secs(20), || {
        let mut sleep = Command::new("sleep");
        sleep.arg("30");
        let Ok(job) = Process::new(sleep).spawn() else {
            return 90;
        };
        let pid = job.pid().unwrap_or_default();
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done_tx.send(futures_executor::block_on(job.cancel_and_join()));
        });
        // A ghost supervisor would never answer: bounded, then the check fails.
        let Ok(result) = done.recv_timeout(Duration::from_secs(10)) else {
            return 91;
        };
        let reaped_and_gone = !std::path::Path::new(&format!("/proc/{pid}")).exists();
        let stopped = result
            .err()
            .and_then(|err| err.into_returned())
            .is_some_and(|output| output.ended.is_stopped());
        code(&[stopped, reaped_and_gone])
    });
    assert_eq!(
        code,
        Some(0),
        "the forked child's check failed (see the code)"
    );
}

#[test]
fn a_forked_child_arms_deadlines_on_a_timer_of_its_own() {
    warm_up_the_parent();
    let code = in_forked_child(Duration::from_secs(20), || {
        let source = CancelSource::new();
        if source.cancel_after(Duration::from_millis(10)).is_err() {
            return 90;
        }
        // A ghost timer would never fire.
        let fired = source.token().wait_timeout(Duration::from_secs(10));
        code(&[fired == Some(CancelReason::Timeout)])
    });
    assert_eq!(
        code,
        Some(0),
        "the deadline never fired in the forked child"
    );
}

#[test]
fn a_forked_child_can_drop_a_deadline_armed_before_the_fork() {
    let source = CancelSource::new();
    source.cancel_after(Duration::from_secs(3600)).unwrap();
    let code = in_forked_child(Duration::from_secs(20), move || {
        // The parent's entry lives in the parent's (ghost) timer: dropping it in the child
        // must neither touch that timer's lock nor remove an entry of the child's own timer.
        let mine = CancelSource::new();
        if mine.cancel_after(Duration::from_millis(20)).is_err() {
            return 90;
        }
        drop(source);
        let fired = mine.token().wait_timeout(Duration::from_secs(10));
        code(&[fired == Some(CancelReason::Timeout)])
    });
    assert_eq!(code, Some(0));
}

#[test]
fn a_forked_child_runs_thread_jobs_though_its_parent_had_idle_threads() {
    // A job's thread waits a few seconds for the next job: the parent has one idle now.
    AbortableNative::spawn(|_| ()).join_blocking().unwrap();
    let code = in_forked_child(Duration::from_secs(20), move || {
        // Handed to the parent's idle thread (a ghost here), it would never run.
        let job = AbortableNative::spawn(|_| ());
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = done_tx.send(job.join_blocking().ok());
        });
        let Ok(ran_on) = done.recv_timeout(Duration::from_secs(10)) else {
            return 91;
        };
        code(&[ran_on.is_some()])
    });
    assert_eq!(code, Some(0), "a thread job never ran in the forked child");
    // And the parent's own jobs run on.
    assert_eq!(AbortableNative::spawn(|_| 7).join_blocking().ok(), Some(7));
}
