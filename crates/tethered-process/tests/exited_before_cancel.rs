//! A child that exited by itself, cancelled before the supervisor reaped it, reads as a job
//! that finished: the cancel changes nothing (it returns `false`) and the handle reads
//! `Ok(exited)`, as the core's table says of a cancel that came after the work finished. The
//! same every time, whatever the watch: the test runs itself again with
//! `TETHERED_PROCESS_WATCH=poll`, where the window between exit and reap is widest.

#![cfg(target_os = "linux")]

use std::process::Command;
use std::time::{Duration, Instant};

use tethered::{CancelReason, Tethered};
use tethered_process::{Ended, Process};

const WATCH_VAR: &str = "TETHERED_PROCESS_WATCH";
const THIS_TEST: &str = "a_child_that_exited_first_reads_exited_whatever_the_watch";

/// Whether `pid` is a zombie (exited, not yet reaped) or gone.
fn exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command's closing parenthesis.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => true,
    }
}

fn rounds() {
    let mut in_window = 0;
    for round in 0..20 {
        let mut command = Command::new("sh");
        command.args(["-c", "exit 3"]);
        let job = Process::new(command).spawn().expect("sh starts");
        let pid = job.pid().expect("started");
        let until = Instant::now() + Duration::from_secs(10);
        while !exited(pid) && Instant::now() < until {
            std::hint::spin_loop();
        }
        // Exited: cancelled now, before or after the supervisor's reap.
        if !job.is_finished() {
            in_window += 1;
        }
        assert!(
            !job.cancel(CancelReason::Requested),
            "round {round}: a cancel after the exit changed something"
        );
        let output = match job.join_blocking() {
            Ok(output) => output,
            Err(err) => panic!("round {round}: the child had exited by itself: {err:?}"),
        };
        assert!(
            matches!(output.ended, Ended::Exited(status) if status.code() == Some(3)),
            "round {round}: {} (the child had exited by itself before the cancel)",
            output.ended
        );
        assert_eq!(output.cancel_reason, None, "round {round}");
    }
    eprintln!(
        "{in_window} of 20 cancels came before the job completed ({})",
        std::env::var(WATCH_VAR).unwrap_or_else(|_| "pidfd".into())
    );
}

#[test]
fn a_child_that_exited_first_reads_exited_whatever_the_watch() {
    rounds();
    if std::env::var(WATCH_VAR).is_err() {
        let status = Command::new(std::env::current_exe().expect("the test binary"))
            .env(WATCH_VAR, "poll")
            .args(["--exact", THIS_TEST, "--nocapture", "--test-threads=1"])
            .status()
            .expect("the test binary runs again");
        assert!(status.success(), "the polled run failed: {status}");
    }
}
