//! The supervisor keeps watching when `poll` itself fails: here because RLIMIT_NOFILE was
//! lowered below the descriptors it watches (then `poll` gives EINVAL). One test in its own
//! binary: the limit is the whole process's.

#![cfg(target_os = "linux")]

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{SLACK, sh, wait_until, zombie_children};
use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
use tethered::{CancelReason, Tethered};
use tethered_process::Process;

#[test]
fn children_are_still_stopped_and_reaped_when_poll_cannot_take_the_descriptors() {
    let jobs: Vec<_> = (0..20)
        .map(|_| {
            let mut command = sh("echo up; exec sleep 600");
            command.stdout(Stdio::piped()).stderr(Stdio::piped());
            Process::new(command)
                .kill_after(Duration::from_secs(1))
                .spawn()
                .expect("sh starts")
        })
        .collect();
    // Each has written its line once it runs `sleep` (the `exec` comes after the `echo`).
    let pids: Vec<u32> = jobs.iter().map(|job| job.pid().expect("started")).collect();
    assert!(wait_until(SLACK, || pids.iter().all(|pid| {
        std::fs::read(format!("/proc/{pid}/cmdline"))
            .is_ok_and(|cmdline| cmdline.starts_with(b"sleep"))
    })));
    // Sixty descriptors watched (a pidfd and two pipes each); allow fewer than that.
    let before = getrlimit(Resource::Nofile);
    let lowered = Rlimit {
        current: Some(32),
        maximum: before.maximum,
    };
    setrlimit(Resource::Nofile, lowered).expect("lowering the soft limit is allowed");
    for job in &jobs {
        job.cancel(CancelReason::Shutdown);
    }
    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let outputs: Vec<_> = jobs.into_iter().map(|job| job.join_blocking()).collect();
        let _ = done_tx.send(outputs);
    });
    let outputs = done.recv_timeout(SLACK);
    setrlimit(Resource::Nofile, before).expect("the limit goes back");
    let outputs = outputs.expect("the stops did not finish: the supervisor stopped watching");
    for output in outputs {
        let output = common::stopped(CancelReason::Shutdown, output);
        assert!(output.ended.is_stopped(), "{output:?}");
        assert_eq!(output.stdout.expect("captured").text(), "up\n");
    }
    assert!(wait_until(SLACK, || common::children().is_empty()));
    assert_eq!(zombie_children(), Vec::<u32>::new());
}
