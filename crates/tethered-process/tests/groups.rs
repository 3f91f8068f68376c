//! The child's process group: the signals reach grandchildren, and nothing of the group
//! outlives the job, also when the child exits by itself.

#![cfg(target_os = "linux")]

mod common;

use std::time::Duration;

use common::{Proc, SLACK, live_group_members, sh, sh_ready, stopped, wait_ready, wait_until};
use tethered::{CancelReason, Tethered};
use tethered_process::{Ended, Process};

/// Two grandchildren that ignore SIGTERM, under a shell that does not.
const GRANDCHILDREN: &str =
    "(trap '' TERM; exec sleep 1000) & (trap '' TERM; exec sleep 1000) & sleep 0.05";

#[test]
fn no_grandchild_survives_the_cancel() {
    let mut job = Process::new(sh_ready(GRANDCHILDREN, "wait"))
        .capture_stdout(false)
        .spawn()
        .expect("sh starts");
    let pgid = job.pid().expect("started");
    wait_ready(&mut job);
    assert!(
        wait_until(SLACK, || live_group_members(pgid).len() == 3),
        "the shell and its two sleeps: {:?}",
        live_group_members(pgid)
    );
    let grandchildren: Vec<Proc> = live_group_members(pgid)
        .into_iter()
        .filter(|&pid| pid != pgid)
        .map(Proc::of)
        .collect();
    let output = stopped(
        CancelReason::Requested,
        futures_executor::block_on(job.cancel_and_join()),
    );
    // The shell went on SIGTERM; the sleeps ignore it and died of the SIGKILL to what was
    // left of the group, before the shell was reaped.
    assert!(matches!(output.ended, Ended::Stopped(_)), "{output:?}");
    for grandchild in &grandchildren {
        assert!(
            wait_until(SLACK, || !grandchild.is_running()),
            "grandchild {} survived",
            grandchild.pid
        );
    }
    assert!(live_group_members(pgid).is_empty());
}

#[test]
fn a_child_that_exits_by_itself_takes_its_group_with_it() {
    let mut command = sh("sleep 1000 & echo $!");
    command.stdout(std::process::Stdio::piped());
    let job = Process::new(command).spawn().expect("sh starts");
    let pgid = job.pid().expect("started");
    let output = job.join_blocking().expect("an output");
    assert!(output.success(), "{output:?}");
    let sleeper: u32 = output
        .stdout
        .as_ref()
        .expect("stdout is captured")
        .text()
        .trim()
        .parse()
        .expect("the shell printed its background job's pid");
    assert!(wait_until(SLACK, || common::stat(sleeper)
        .is_none_or(|stat| stat.state == 'Z')));
    assert!(live_group_members(pgid).is_empty());
}

#[test]
fn without_a_group_of_its_own_the_child_stays_in_ours_and_alone_is_signalled() {
    let job = Process::new(sh("exec sleep 1000"))
        .own_group(false)
        .spawn()
        .expect("sleep starts");
    let ours = common::stat(std::process::id()).expect("our own stat").pgid;
    let child = common::stat(job.pid().expect("started")).expect("the child's stat");
    assert_eq!(child.pgid, ours);
    let output = stopped(
        CancelReason::Requested,
        futures_executor::block_on(job.cancel_and_join()),
    );
    assert!(matches!(output.ended, Ended::Stopped(_)), "{output:?}");
    // This test process (in that same group) got no signal: it is still here to assert.
}

#[test]
fn a_leader_that_moves_to_another_group_is_still_stopped() {
    // It joins this test's own group: signalling its old group id reaches nobody now.
    let script = "import os, time\nos.setpgid(0, os.getpgid(os.getppid()))\nprint('ready', flush=True)\ntime.sleep(1000)\n";
    let mut command = std::process::Command::new("python3");
    command
        .args(["-c", script])
        .stdout(std::process::Stdio::piped());
    let Ok(mut job) = Process::new(command)
        .capture_stdout(false)
        .kill_after(Duration::from_secs(5))
        .spawn()
    else {
        eprintln!("python3 is not installed; skipped");
        return;
    };
    wait_ready(&mut job);
    let output = stopped(
        CancelReason::Requested,
        futures_executor::block_on(job.cancel_and_join()),
    );
    assert!(matches!(output.ended, Ended::Stopped(_)), "{output:?}");
}
