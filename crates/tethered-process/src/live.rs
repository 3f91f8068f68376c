//! [`Live`]: an unreaped child and what its stop needs; [`Live::run`] is the stop sequence.
//!
//! # Invariants
//!
//! 1. Only the thread running [`Live::run`] or [`Live::kill_now`] signals or reaps the child,
//!    and a `Live` is run at most once (both take it by `&mut` and leave `child` empty).
//! 2. Every signal is sent while `child` is still `Some`, that is before the reap, so the pid
//!    and the group id still belong to the child (see `target.rs`).
//! 3. Once `waitid` fails (something else reaped the child), no signal is sent at all.

use std::io;
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};
use tethered::CancelToken;

use crate::capture::Capture;
use crate::output::{Ended, ProcessOutput};
use crate::signal::StopSignal;
use crate::target::Target;
use crate::watch::Watch;

/// How long the waiter waits, after the reap, for the captured pipes to reach their end. Only a
/// process outside the group can hold them open that long (see [`Captured::still_open`]).
///
/// [`Captured::still_open`]: crate::Captured::still_open
pub(crate) const PIPE_LINGER: Duration = Duration::from_secs(1);

/// How a cancelled child is stopped.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StopPolicy {
    pub(crate) grace: Duration,
    pub(crate) polite: StopSignal,
}

/// An unreaped child, with its pipes' readers.
pub(crate) struct Live {
    /// `None` once reaped (or lost to another reaper).
    child: Option<Child>,
    pid: Pid,
    target: Target,
    #[cfg(target_os = "linux")]
    pidfd: Option<std::sync::Arc<rustix::fd::OwnedFd>>,
    policy: StopPolicy,
    stdout: Option<Capture>,
    stderr: Option<Capture>,
}

/// Where the stop sequence is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// No cancel seen yet.
    Waiting,
    /// The polite signal went out; SIGKILL follows at `deadline` (never if `None`).
    Stopping { deadline: Option<Instant> },
    /// SIGKILL went out.
    Killing,
}

impl Live {
    pub(crate) fn new(child: Child, own_group: bool, policy: StopPolicy) -> Live {
        let pid = Pid::from_child(&child);
        // The child is ours and unreaped, so the pidfd names it. Refused before Linux 5.3 or by
        // a seccomp filter; then the waiter polls instead.
        #[cfg(target_os = "linux")]
        let pidfd = rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty())
            .ok()
            .map(std::sync::Arc::new);
        Live {
            child: Some(child),
            pid,
            #[cfg(target_os = "linux")]
            target: Target::new(pid, own_group, pidfd.clone()),
            #[cfg(not(target_os = "linux"))]
            target: Target::new(pid, own_group),
            #[cfg(target_os = "linux")]
            pidfd,
            policy,
            stdout: None,
            stderr: None,
        }
    }

    /// Reads `pipes` (stdout, stderr) on threads of their own until the child is reaped.
    pub(crate) fn capture(&mut self, stdout: Option<Capture>, stderr: Option<Capture>) {
        self.stdout = stdout;
        self.stderr = stderr;
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid.as_raw_nonzero().get().unsigned_abs()
    }

    /// Whether the child still waits to be reaped.
    pub(crate) fn is_unreaped(&self) -> bool {
        self.child.is_some()
    }

    /// Waits for the child to exit. Once `token` is cancelled (at once if `token` is `None`)
    /// stops it: the polite signal, then SIGKILL when the grace has passed. When it has exited,
    /// kills what is left of its group, reaps it and collects its pipes.
    pub(crate) fn run(&mut self, token: Option<&CancelToken>) -> ProcessOutput {
        #[cfg(target_os = "linux")]
        let mut watch = Watch::new(self.pid, self.pidfd.clone(), token);
        #[cfg(not(target_os = "linux"))]
        let mut watch = Watch::new(self.pid, token);
        let mut phase = Phase::Waiting;
        let mut cancelled_at = None;
        let lost = loop {
            match watch.exited() {
                Ok(true) => break None,
                Ok(false) => {}
                Err(err) => break Some(err),
            }
            let now = Instant::now();
            match phase {
                Phase::Waiting if token.is_none_or(CancelToken::is_cancelled) => {
                    cancelled_at = Some(now);
                    phase = self.begin_stop(now);
                    watch.signalled();
                    continue;
                }
                Phase::Stopping {
                    deadline: Some(deadline),
                } if now >= deadline => {
                    self.target.send(Signal::KILL);
                    phase = Phase::Killing;
                    watch.signalled();
                    continue;
                }
                _ => {}
            }
            let (pending, deadline) = match phase {
                Phase::Waiting => (token, None),
                Phase::Stopping { deadline } => (None, deadline),
                Phase::Killing => (None, None),
            };
            watch.sleep(pending, deadline);
        };
        let status = self.reap(lost);
        let reaped_at = Instant::now();
        let ended = match (status, phase) {
            (Err(err), _) => Ended::Lost(err),
            (Ok(status), Phase::Waiting) => Ended::Exited(status),
            (Ok(status), Phase::Stopping { .. }) => Ended::Stopped(status),
            (Ok(status), Phase::Killing) => Ended::Killed(status),
        };
        let until = reaped_at.checked_add(PIPE_LINGER).unwrap_or(reaped_at);
        ProcessOutput {
            pid: self.pid(),
            ended,
            cancel_reason: token.and_then(CancelToken::reason),
            cancel_to_reaped: cancelled_at.map(|at| reaped_at.saturating_duration_since(at)),
            stdout: self.stdout.take().map(|capture| capture.collect(until)),
            stderr: self.stderr.take().map(|capture| capture.collect(until)),
        }
    }

    /// Sends the first signal of the stop: the polite one, or SIGKILL for a zero grace.
    fn begin_stop(&self, now: Instant) -> Phase {
        if self.policy.grace.is_zero() {
            self.target.send(Signal::KILL);
            return Phase::Killing;
        }
        self.target.send(self.policy.polite.to_rustix());
        // A stopped process (Ctrl-Z, SIGSTOP) handles the polite signal only once continued.
        self.target.send(Signal::CONT);
        Phase::Stopping {
            // `None` (never) for a grace too long to add to an `Instant`, e.g. `Duration::MAX`.
            deadline: now.checked_add(self.policy.grace),
        }
    }

    /// Reaps the exited child, after a last SIGKILL to its group while the leader's zombie
    /// still holds the group id. With `lost` set, something else reaped it: no signal then.
    fn reap(&mut self, lost: Option<io::Error>) -> io::Result<ExitStatus> {
        let mut child = self
            .child
            .take()
            .ok_or_else(|| io::Error::other("the child was reaped already"))?;
        if let Some(err) = lost {
            return Err(err);
        }
        self.target.kill_leftovers();
        child.wait()
    }

    /// The last resort, when no thread can be had to stop the child politely: SIGKILL to the
    /// group and reap, on this thread. The pipes' readers end when the pipes close.
    pub(crate) fn kill_now(&mut self) {
        if self.child.is_some() {
            // Before the reap, like every signal (invariant 2).
            self.target.send(Signal::KILL);
            if let Some(mut child) = self.child.take() {
                let _ = child.wait();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::Command;

    use tethered::{CancelReason, CancelSource};

    use super::*;

    /// A `Live` for `sh -c script` in a group of its own that polls `waitid`, as on macOS or
    /// where `pidfd_open` is refused.
    fn polling_live(script: &str, grace: Duration) -> Live {
        let child = Command::new("sh")
            .args(["-c", script])
            .process_group(0)
            .spawn()
            .expect("sh starts");
        let policy = StopPolicy {
            grace,
            polite: StopSignal::Term,
        };
        #[allow(unused_mut)]
        let mut live = Live::new(child, true, policy);
        #[cfg(target_os = "linux")]
        {
            live.pidfd = None;
            live.target.forget_pidfd();
        }
        live
    }

    #[test]
    fn polling_sees_a_child_exit_by_itself() {
        let mut live = polling_live("exit 5", Duration::from_secs(2));
        let token = CancelSource::new().token();
        let output = live.run(Some(&token));
        assert!(matches!(output.ended, Ended::Exited(status) if status.code() == Some(5)));
        assert!(!live.is_unreaped());
    }

    #[test]
    fn polling_wakes_at_the_cancel_and_stops_the_child() {
        let mut live = polling_live("while :; do :; done", Duration::from_secs(2));
        let source = CancelSource::new();
        let token = source.token();
        let canceller = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            source.cancel(CancelReason::Timeout);
        });
        let output = live.run(Some(&token));
        canceller.join().expect("the canceller returns");
        assert!(matches!(output.ended, Ended::Stopped(status) if status.signal() == Some(15)));
        assert_eq!(output.cancel_reason, Some(CancelReason::Timeout));
    }

    #[test]
    fn polling_kills_after_the_grace() {
        let grace = Duration::from_millis(100);
        let mut live = polling_live("trap '' TERM; while :; do :; done", grace);
        // Without a token the stop begins at once, as in a rescue. The shell may not have
        // set its trap yet; then SIGTERM stops it: both ends are a stop.
        let output = live.run(None);
        match output.ended {
            Ended::Killed(status) => {
                assert_eq!(status.signal(), Some(9));
                assert!(output.cancel_to_reaped.is_some_and(|took| took >= grace));
            }
            Ended::Stopped(status) => assert_eq!(status.signal(), Some(15)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn kill_now_kills_and_reaps_on_the_spot() {
        let mut live = polling_live("trap '' TERM; while :; do :; done", Duration::MAX);
        let pid = live.pid;
        live.kill_now();
        assert!(!live.is_unreaped());
        // Reaped: no such process, not even a zombie.
        assert_eq!(
            rustix::process::test_kill_process(pid),
            Err(rustix::io::Errno::SRCH)
        );
    }
}
