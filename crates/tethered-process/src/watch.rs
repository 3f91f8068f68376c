//! [`Watch`]: how the waiter learns that its child exited, without reaping it, and sleeps until
//! then, a cancel, or a deadline.
//!
//! `waitid(P_PID, pid, WEXITED | WNOHANG | WNOWAIT)` says whether the child has exited and
//! leaves it a zombie: its pid, and the group id it lends its group, stay reserved until the
//! waiter reaps it with `Child::wait`. Between two looks the waiter sleeps:
//!
//! - On Linux it blocks in `poll` on a pidfd of the child (readable once it exited) and an
//!   eventfd that the token's cancel callback writes to, so both wake it at once and an idle
//!   child costs nothing.
//! - Elsewhere (macOS; or a Linux where `pidfd_open` is refused: before 5.3, or under a seccomp
//!   filter), it sleeps in `CancelToken::wait_timeout`, which a cancel interrupts, and looks
//!   again: after 1 ms at first, doubling up to [`MAX_POLL`]. Back to 1 ms after each signal, so
//!   a child that stops on it is seen gone about a millisecond later.

use std::io;
use std::time::{Duration, Instant};

use rustix::process::{Pid, WaitId, WaitIdOptions};
use tethered::{CallbackGuard, CancelToken};

/// The longest sleep between two looks when polling.
pub(crate) const MAX_POLL: Duration = Duration::from_millis(20);
/// The first sleep, and the one after each signal.
const MIN_POLL: Duration = Duration::from_millis(1);

/// Watches one unreaped child.
pub(crate) struct Watch {
    pid: Pid,
    how: How,
    /// Keeps the cancel callback that writes to the eventfd registered.
    _wake_on_cancel: Option<CallbackGuard>,
}

enum How {
    #[cfg(target_os = "linux")]
    Pidfd(linux::PidfdWait),
    Poll {
        interval: Duration,
    },
}

impl Watch {
    /// Watches `pid`. `token` is the job's token while a cancel is still to be noticed (the
    /// waiter's first run), `None` when the stop has begun already (a rescue).
    #[cfg(not(target_os = "linux"))]
    pub(crate) fn new(pid: Pid, _token: Option<&CancelToken>) -> Watch {
        Watch::polling(pid)
    }

    /// Watches `pid` through `pidfd` if there is one; see the other `new`.
    #[cfg(target_os = "linux")]
    pub(crate) fn new(
        pid: Pid,
        pidfd: Option<std::sync::Arc<rustix::fd::OwnedFd>>,
        token: Option<&CancelToken>,
    ) -> Watch {
        let Some(pidfd) = pidfd else {
            return Watch::polling(pid);
        };
        match linux::PidfdWait::new(pidfd, token) {
            Some((wait, guard)) => Watch {
                pid,
                how: How::Pidfd(wait),
                _wake_on_cancel: guard,
            },
            None => Watch::polling(pid),
        }
    }

    /// Watches `pid` by looking at it now and then.
    pub(crate) fn polling(pid: Pid) -> Watch {
        Watch {
            pid,
            how: How::Poll { interval: MIN_POLL },
            _wake_on_cancel: None,
        }
    }

    /// Whether the child has exited (it is then a zombie, still unreaped). An error means
    /// it is no longer our child to wait for: something else reaped it.
    pub(crate) fn exited(&self) -> io::Result<bool> {
        let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
        loop {
            match rustix::process::waitid(WaitId::Pid(self.pid), options) {
                Ok(status) => return Ok(status.is_some()),
                Err(rustix::io::Errno::INTR) => continue,
                Err(err) => return Err(err.into()),
            }
        }
    }

    /// Sleeps until the child may have exited, `token` (if given) is cancelled, or `deadline`
    /// (if any) has passed. It may return early; the caller looks again.
    pub(crate) fn sleep(&mut self, token: Option<&CancelToken>, deadline: Option<Instant>) {
        let left = deadline.map(|deadline| deadline.saturating_duration_since(Instant::now()));
        match &mut self.how {
            #[cfg(target_os = "linux")]
            How::Pidfd(wait) => match wait.sleep(token.is_some(), left) {
                Ok(false) => {}
                // The pidfd is readable, yet the caller found the child not exited: a tracer
                // (`strace`, a debugger) holds the exit until it has seen it. A readable pidfd
                // stays readable, so `poll` would return at once again and again: look now and
                // then instead, as where there is no pidfd.
                Ok(true) => self.how = How::Poll { interval: MIN_POLL },
                // `poll` failed (out of memory): fall back to looking now and then.
                Err(_) => self.how = How::Poll { interval: MIN_POLL },
            },
            How::Poll { interval } => {
                let nap = left.map_or(*interval, |left| left.min(*interval));
                match token {
                    Some(token) => {
                        token.wait_timeout(nap);
                    }
                    None => std::thread::sleep(nap),
                }
                *interval = interval.saturating_mul(2).min(MAX_POLL);
            }
        }
    }

    /// A signal was just sent: look again soon.
    pub(crate) fn signalled(&mut self) {
        if let How::Poll { interval } = &mut self.how {
            *interval = MIN_POLL;
        }
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::io;
    use std::sync::Arc;
    use std::time::Duration;

    use rustix::event::{EventfdFlags, PollFd, PollFlags, Timespec};
    use rustix::fd::OwnedFd;
    use tethered::{CallbackGuard, CancelToken};

    /// `poll` on a pidfd of the child and, until the cancel, an eventfd the cancel writes to.
    pub(super) struct PidfdWait {
        pidfd: Arc<OwnedFd>,
        wake: Option<Arc<OwnedFd>>,
    }

    impl PidfdWait {
        /// `None` if the cancel could not be wired to an eventfd (then the caller polls).
        pub(super) fn new(
            pidfd: Arc<OwnedFd>,
            token: Option<&CancelToken>,
        ) -> Option<(PidfdWait, Option<CallbackGuard>)> {
            let Some(token) = token else {
                return Some((PidfdWait { pidfd, wake: None }, None));
            };
            let wake = Arc::new(
                rustix::event::eventfd(0, EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK).ok()?,
            );
            let writer = wake.clone();
            let guard = token.on_cancel(move |_reason| {
                // Only a counter overflow (2^64 - 1 writes) fails; one write is plenty.
                let _ = rustix::io::write(&*writer, &1u64.to_ne_bytes());
            });
            Some((
                PidfdWait {
                    pidfd,
                    wake: Some(wake),
                },
                Some(guard),
            ))
        }

        /// Blocks until the child exits, (while `cancel_pending`) the cancel comes, or `left`
        /// has passed. `Ok(true)` if the pidfd is readable: the child has exited, or a tracer
        /// still holds its exit.
        pub(super) fn sleep(
            &self,
            cancel_pending: bool,
            left: Option<Duration>,
        ) -> io::Result<bool> {
            // A timeout too long for a `Timespec` is as good as none.
            let timeout = left.and_then(|left| Timespec::try_from(left).ok());
            let mut fds = vec![PollFd::new(&*self.pidfd, PollFlags::IN)];
            // After the cancel the eventfd stays readable; leave it out, or `poll` would spin.
            if let (true, Some(wake)) = (cancel_pending, &self.wake) {
                fds.push(PollFd::new(&**wake, PollFlags::IN));
            }
            match rustix::event::poll(&mut fds, timeout.as_ref()) {
                Ok(_) => Ok(fds[0].revents().contains(PollFlags::IN)),
                Err(rustix::io::Errno::INTR) => Ok(false),
                Err(err) => Err(err.into()),
            }
        }
    }
}
