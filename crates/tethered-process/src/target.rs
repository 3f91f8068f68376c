//! [`Target`]: where a tethered child's signals go, its process group or the child alone.
//!
//! Only the waiter (the one thread that reaps the child) calls [`Target::send`], and only
//! before it reaps: until then the child is alive or a zombie, and a zombie keeps its pid, so
//! the pid cannot name another process. The group id is the leader's pid (the child was made
//! the leader of a new group), and a group id is not reused while any process of the group
//! exists, the unreaped leader included. So signalling `-pgid` before the reap reaches our
//! group and nothing else, even when every other member has gone.

use rustix::process::{Pid, Signal};

/// Where the signals for one child go.
pub(crate) struct Target {
    pid: Pid,
    /// The child leads a process group of its own, whose id is its pid.
    group: bool,
    /// On Linux, a pidfd of the child: a signal through it reaches this very process or
    /// nothing, whatever else reaps in this process.
    #[cfg(target_os = "linux")]
    pidfd: Option<std::sync::Arc<rustix::fd::OwnedFd>>,
}

impl Target {
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn new(pid: Pid, group: bool) -> Target {
        Target { pid, group }
    }

    #[cfg(target_os = "linux")]
    pub(crate) fn new(
        pid: Pid,
        group: bool,
        pidfd: Option<std::sync::Arc<rustix::fd::OwnedFd>>,
    ) -> Target {
        Target { pid, group, pidfd }
    }

    /// Sends `signal` to the group, or to the child alone. Call only while the child is
    /// unreaped (see the module docs).
    pub(crate) fn send(&self, signal: Signal) {
        if self.group {
            // Errors: ESRCH (no member left that we may signal) means there is nothing to stop.
            let _ = rustix::process::kill_process_group(self.pid, signal);
            // A leader that moved itself into another group (setpgid) is still ours to stop.
            if rustix::process::getpgid(Some(self.pid)).is_ok_and(|pgid| pgid != self.pid) {
                self.send_to_child(signal);
            }
        } else {
            self.send_to_child(signal);
        }
    }

    /// Sends SIGKILL to what is left of the group once the leader has exited and before it is
    /// reaped: the group id is still reserved by the leader's zombie, so this cannot reach a
    /// stranger. Does nothing for a child without a group of its own.
    pub(crate) fn kill_leftovers(&self) {
        if self.group {
            let _ = rustix::process::kill_process_group(self.pid, Signal::KILL);
        }
    }

    fn send_to_child(&self, signal: Signal) {
        #[cfg(target_os = "linux")]
        if let Some(pidfd) = &self.pidfd {
            match pidfd_send_signal(pidfd, signal) {
                // Sent; or no such process (a zombie still takes signals, so it was reaped by
                // someone else): nothing to stop either way.
                Ok(()) | Err(rustix::io::Errno::SRCH) => return,
                // Refused (a seccomp filter that allows `kill` but not `pidfd_send_signal`, a
                // kernel without it): the child is unreaped (module docs), so its pid is still
                // its own and `kill` reaches it.
                Err(_) => {}
            }
        }
        let _ = rustix::process::kill_process(self.pid, signal);
    }
}

/// `pidfd_send_signal`, which the tests can make fail as a seccomp filter would.
#[cfg(target_os = "linux")]
fn pidfd_send_signal(pidfd: &rustix::fd::OwnedFd, signal: Signal) -> rustix::io::Result<()> {
    #[cfg(test)]
    if tests::REFUSE_PIDFD_SIGNALS.with(std::cell::Cell::get) {
        return Err(rustix::io::Errno::PERM);
    }
    rustix::process::pidfd_send_signal(pidfd, signal)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::cell::Cell;
    use std::process::Command;

    use rustix::process::{Pid, PidfdFlags, Signal};

    use super::Target;

    thread_local! {
        /// Makes this thread's `pidfd_send_signal` fail with `EPERM`.
        pub(super) static REFUSE_PIDFD_SIGNALS: Cell<bool> = const { Cell::new(false) };
    }

    #[test]
    fn a_refused_pidfd_signal_falls_back_to_kill() {
        let mut child = Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep starts");
        let pid = Pid::from_raw(child.id() as i32).expect("a pid");
        let pidfd = rustix::process::pidfd_open(pid, PidfdFlags::empty()).expect("pidfd_open");
        let target = Target::new(pid, false, Some(std::sync::Arc::new(pidfd)));
        REFUSE_PIDFD_SIGNALS.with(|refuse| refuse.set(true));
        target.send(Signal::KILL);
        REFUSE_PIDFD_SIGNALS.with(|refuse| refuse.set(false));
        // The child got SIGKILL through `kill`; without the fallback it sleeps on.
        let (done_tx, done) = std::sync::mpsc::channel();
        let waiter = std::thread::spawn(move || {
            let status = child.wait();
            let _ = done_tx.send(());
            (child, status)
        });
        let killed = done
            .recv_timeout(std::time::Duration::from_secs(10))
            .is_ok();
        if !killed {
            let _ = rustix::process::kill_process(pid, Signal::KILL);
        }
        let (_child, status) = waiter.join().expect("the waiter returns");
        assert!(killed, "the refused pidfd signal was not sent another way");
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.expect("reaped").signal(), Some(9));
    }
}
