//! The supervisor's fallback where there are no pidfds (macOS, old kernels, a seccomp filter):
//! it looks at each child with `waitid` between sleeps. Forced here on Linux through the
//! environment: the test runs itself again with `TETHERED_PROCESS_WATCH=poll`.

#![cfg(target_os = "linux")]

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{Proc, SLACK, busy, ignores_term, sh, stopped, wait_until, zombie_children};
use tethered::{CancelReason, Tethered};
use tethered_process::{Ended, Process};

const WATCH_VAR: &str = "TETHERED_PROCESS_WATCH";
const THIS_TEST: &str = "without_pidfds_the_supervisor_polls_and_every_stop_still_holds";

/// The pidfds this process holds now.
fn pidfds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|entry| {
                    std::fs::read_link(entry.path())
                        .is_ok_and(|target| target.to_string_lossy().contains("pidfd"))
                })
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn without_pidfds_the_supervisor_polls_and_every_stop_still_holds() {
    if std::env::var(WATCH_VAR).as_deref() == Ok("poll") {
        polled();
        return;
    }
    // The control: by default a live child is watched through a pidfd, which `pidfds` sees
    // (so the check below can tell the two apart).
    let job = Process::new(busy()).spawn().expect("sh starts");
    assert!(pidfds() >= 1, "no pidfd for a live child by default");
    stopped(
        CancelReason::Requested,
        futures_executor::block_on(job.cancel_and_join()),
    );
    let status = Command::new(std::env::current_exe().expect("the test binary"))
        .env(WATCH_VAR, "poll")
        .args(["--exact", THIS_TEST, "--nocapture", "--test-threads=1"])
        .status()
        .expect("the test binary runs again");
    assert!(status.success(), "the polled run failed: {status}");
}

/// Each stop of the crate, with every child watched by polling.
fn polled() {
    // No pidfd is opened.
    let busy_job = Process::new(busy()).spawn().expect("sh starts");
    let child = Proc::of(busy_job.pid().expect("started"));
    assert_eq!(
        pidfds(),
        0,
        "a pidfd was opened though polling was asked for"
    );

    // A cancel stops a busy child with the polite signal.
    let output = stopped(
        CancelReason::Timeout,
        futures_executor::block_on(busy_job.cancel_and_join_with(CancelReason::Timeout)),
    );
    assert!(matches!(output.ended, Ended::Stopped(_)), "{output:?}");
    assert!(!child.exists());

    // One that ignores it is killed after the grace.
    let mut ignoring = Process::new(ignores_term())
        .kill_after(Duration::from_millis(200))
        .spawn()
        .expect("sh starts");
    std::thread::sleep(Duration::from_millis(100)); // its trap is set
    ignoring.cancel(CancelReason::Requested);
    let output = stopped(
        CancelReason::Requested,
        futures_executor::block_on(&mut ignoring),
    );
    assert!(matches!(output.ended, Ended::Killed(_)), "{output:?}");

    // One that ends by itself is seen, reaped, and its output kept.
    let mut command = sh("echo polled; exit 4");
    command.stdout(Stdio::piped());
    let output = Process::new(command)
        .spawn()
        .expect("sh starts")
        .join_blocking()
        .expect("an output");
    assert_eq!(output.status().and_then(|status| status.code()), Some(4));
    assert_eq!(output.stdout.expect("captured").text(), "polled\n");

    // Fifty dropped at once are all gone, no zombie.
    let jobs: Vec<_> = (0..50)
        .map(|_| {
            Process::new(sh("exec sleep 600"))
                .spawn()
                .expect("sh starts")
        })
        .collect();
    drop(jobs);
    assert!(wait_until(SLACK, || common::children().is_empty()));
    assert_eq!(zombie_children(), Vec::<u32>::new());
}
