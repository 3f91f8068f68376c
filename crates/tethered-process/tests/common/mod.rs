//! What the tests of real child processes share: the children, and `/proc` readings that tell
//! a running process from a zombie from one that is gone (Linux).

#![allow(dead_code, unreachable_pub)]

pub mod pool;

use std::process::Command;
use std::time::{Duration, Instant};

use tethered::{CancelReason, NativeError};
use tethered_process::ProcessOutput;

/// Far more than anything here needs on an idle machine, for a slow shared one.
pub const SLACK: Duration = Duration::from_secs(10);

/// What a job cancelled with `reason` before its child was reaped resolves to: the stop, with
/// the reaped child's output. Gives that output; panics on anything else.
#[track_caller]
pub fn stopped(
    reason: CancelReason,
    result: Result<ProcessOutput, NativeError<ProcessOutput>>,
) -> ProcessOutput {
    match result {
        Err(NativeError::Cancelled {
            reason: seen,
            returned: Some(output),
            ..
        }) if seen == reason => *output,
        other => panic!("expected a stop with {reason:?} and the reaped child's output: {other:?}"),
    }
}

/// `sh -c script`.
pub fn sh(script: &str) -> Command {
    let mut command = Command::new("sh");
    command.args(["-c", script]);
    command
}

/// A child that burns CPU until a signal ends it; SIGTERM does.
pub fn busy() -> Command {
    sh("while :; do :; done")
}

/// A child that ignores SIGTERM and burns CPU until SIGKILL.
pub fn ignores_term() -> Command {
    sh("trap '' TERM; while :; do :; done")
}

/// What `/proc/PID/stat` says of a process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stat {
    pub state: char,
    pub ppid: u32,
    pub pgid: u32,
    /// Clock ticks after boot at which it started: with the pid, who it is.
    pub start: u64,
}

/// `/proc/PID/stat`, or `None` if there is no such process (not even a zombie).
pub fn stat(pid: u32) -> Option<Stat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces: split after the last `)`.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Stat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgid: fields.get(2)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// One process, pinned by its start time so that a reused pid is not mistaken for it.
#[derive(Clone, Copy, Debug)]
pub struct Proc {
    pub pid: u32,
    start: u64,
}

impl Proc {
    /// The process `pid` is now.
    #[track_caller]
    pub fn of(pid: u32) -> Proc {
        let stat = stat(pid).unwrap_or_else(|| panic!("no process {pid}"));
        Proc {
            pid,
            start: stat.start,
        }
    }

    /// The process `pid` is now, or `None` if it is gone already (reaped).
    pub fn try_of(pid: u32) -> Option<Proc> {
        stat(pid).map(|stat| Proc {
            pid,
            start: stat.start,
        })
    }

    fn stat(&self) -> Option<Stat> {
        stat(self.pid).filter(|stat| stat.start == self.start)
    }

    /// Whether it still exists, a zombie included.
    pub fn exists(&self) -> bool {
        self.stat().is_some()
    }

    /// Whether it exists and is not a zombie.
    pub fn is_running(&self) -> bool {
        self.stat().is_some_and(|stat| stat.state != 'Z')
    }
}

/// Polls `done` every millisecond until it holds or `limit` has passed; whether it held.
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let started = Instant::now();
    loop {
        if done() {
            return true;
        }
        if started.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Every process in `/proc`, with its stat.
fn all_processes() -> Vec<(u32, Stat)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, stat(pid)?)))
        .collect()
}

/// The members of process group `pgid` that are not zombies. (Here a killed grandchild is
/// reparented to pid 1, which may never reap it: a zombie is dead all the same.)
pub fn live_group_members(pgid: u32) -> Vec<u32> {
    all_processes()
        .into_iter()
        .filter(|(_, stat)| stat.pgid == pgid && stat.state != 'Z')
        .map(|(pid, _)| pid)
        .collect()
}

/// This process's children that are zombies: exited and not reaped.
pub fn zombie_children() -> Vec<u32> {
    let me = std::process::id();
    all_processes()
        .into_iter()
        .filter(|(_, stat)| stat.ppid == me && stat.state == 'Z')
        .map(|(pid, _)| pid)
        .collect()
}

/// This process's children, zombies or not.
pub fn children() -> Vec<u32> {
    let me = std::process::id();
    all_processes()
        .into_iter()
        .filter(|(_, stat)| stat.ppid == me)
        .map(|(pid, _)| pid)
        .collect()
}

/// How many threads this process has.
pub fn thread_count() -> usize {
    std::fs::read_dir("/proc/self/task").map_or(0, Iterator::count)
}

/// The median and the largest of `times`.
pub fn median_and_worst(times: &mut [Duration]) -> (Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[times.len() - 1])
}

/// `sh -c "script; echo ready; rest"` with stdout piped to the caller: spawn it with
/// `capture_stdout(false)` and call [`wait_ready`], so the signal comes only once `script`
/// (a `trap`, say) has run.
pub fn sh_ready(script: &str, rest: &str) -> Command {
    let mut command = sh(&format!("{script}; echo ready; {rest}"));
    command.stdout(std::process::Stdio::piped());
    command
}

/// Reads the `ready` line of a child made by [`sh_ready`].
#[track_caller]
pub fn wait_ready(job: &mut tethered_process::ProcessJob) {
    use std::io::BufRead;
    let stdout = job
        .take_stdout()
        .expect("spawned with a piped stdout and capture_stdout(false)");
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("the child writes its ready line");
    assert_eq!(line, "ready\n");
}
