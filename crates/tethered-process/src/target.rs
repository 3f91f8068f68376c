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
            let _ = rustix::process::pidfd_send_signal(&**pidfd, signal);
            return;
        }
        let _ = rustix::process::kill_process(self.pid, signal);
    }
}

#[cfg(all(test, target_os = "linux"))]
impl Target {
    /// Signals by pid, as where there is no pidfd.
    pub(crate) fn forget_pidfd(&mut self) {
        self.pidfd = None;
    }
}
