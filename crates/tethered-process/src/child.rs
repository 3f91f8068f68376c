//! [`Watched`]: one unreaped child as the supervisor holds it, and its stop sequence as steps
//! the supervisor takes when something happens (an exit, a cancel, a deadline, a pipe).
//!
//! # Lifecycle
//!
//! ```text
//!            cancel                 grace passed
//!  Waiting ──────────▶ Stopping ───────────────▶ Killing
//!     │  (zero grace: straight to Killing)          │
//!     └─────────────── exited (waitid) ─────────────┴──▶ Reaped ──(pipes ended, or the
//!                                                                  linger passed)──▶ finished
//! ```
//!
//! # Invariants
//!
//! 1. Only the supervisor thread touches a `Watched` once it is registered: it alone signals
//!    and reaps the child (before that, only the spawning thread, which kills and reaps it if
//!    registering fails: the `Drop` below).
//! 2. Every signal is sent while `child` is `Some`, before the reap, so the pid and the group
//!    id still belong to the child (see `target.rs`).
//! 3. Once `waitid` fails (something else reaped the child), no signal is sent at all.
//! 4. The completer is completed exactly once, by `finish`, after the reap; a `Watched`
//!    dropped unfinished (the supervisor thread is gone) kills and reaps its child and drops
//!    the completer, which finishes the job as stopped.

use std::io;
use std::os::fd::OwnedFd;
use std::process::{Child, ExitStatus};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions};
use tethered::{CallbackGuard, CancelToken, Completer};

use crate::output::{Ended, ProcessOutput};
use crate::pipe::Pipe;
use crate::signal::StopSignal;
use crate::target::Target;

/// How long the supervisor reads the captured pipes after the reap, waiting for their end.
/// Only a process outside the group can hold them open that long (see
/// [`Captured::still_open`](crate::Captured::still_open)).
pub(crate) const PIPE_LINGER: Duration = Duration::from_secs(1);

/// The longest sleep between two looks at a child watched by polling.
pub(crate) const MAX_POLL: Duration = Duration::from_millis(20);
/// The first sleep, and the one after each signal.
const MIN_POLL: Duration = Duration::from_millis(1);

/// How a cancelled child is stopped.
#[derive(Clone, Copy, Debug)]
pub(crate) struct StopPolicy {
    pub(crate) kill_after: Duration,
    pub(crate) polite: StopSignal,
}

/// Which of a child's descriptors `poll` found ready.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    Pidfd,
    Stdout,
    Stderr,
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

/// How the supervisor learns that the child exited.
enum Watch {
    /// `poll` on a pidfd: readable once the child exited.
    Pidfd(Arc<OwnedFd>),
    /// `waitid` now and then: where there is no pidfd, or under a tracer (whose pidfd is
    /// readable before `waitid` reports the exit; `poll` would return at once, forever).
    Poll { next: Instant, interval: Duration },
}

/// A child the supervisor watches, stops and reaps.
pub(crate) struct Watched {
    id: u64,
    /// `None` once reaped (or lost to another reaper).
    child: Option<Child>,
    pid: Pid,
    target: Target,
    watch: Watch,
    policy: StopPolicy,
    phase: Phase,
    token: CancelToken,
    cancelled_at: Option<Instant>,
    /// How it ended and when it was reaped, once it was.
    reaped: Option<(Ended, Instant)>,
    stdout: Option<Pipe>,
    stderr: Option<Pipe>,
    /// Shared with the job's launch, which counts the child idle or running through it (a
    /// pool's worker); taken out to complete it (invariant 4).
    completer: SharedCompleter,
    /// Keeps the cancel callback that posts to the supervisor registered.
    cancel_link: Option<CallbackGuard>,
    /// What a cancel's finished check looks at; emptied before the reap.
    unreaped: Arc<Unreaped>,
}

/// How a cancel looks whether the child exited before it (the job's
/// [`finished_check`](tethered::Completer::finished_check)): its pid while it is unreaped,
/// `None` once the supervisor reaps it (or finds it reaped elsewhere). The supervisor takes the
/// pid under the lock before it reaps, and a look holds the lock while it asks `waitid`, so no
/// look ever asks about a pid that may name another process by then (invariant 2's rule, for
/// looks).
pub(crate) struct Unreaped(std::sync::Mutex<Option<Pid>>);

impl Unreaped {
    pub(crate) fn new(child: &Child) -> Arc<Unreaped> {
        Arc::new(Unreaped(std::sync::Mutex::new(Some(Pid::from_child(
            child,
        )))))
    }

    /// Whether the child has exited (a zombie, or reaped already). An error of `waitid` means
    /// something else reaped it: it exited too.
    pub(crate) fn exited(&self) -> bool {
        let pid = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match *pid {
            None => true,
            Some(pid) => exited(pid).unwrap_or(true),
        }
    }

    /// The supervisor is about to reap the child: no look asks about its pid from now on.
    fn reaping(&self) {
        *self.0.lock().unwrap_or_else(|e| e.into_inner()) = None;
    }
}

/// A child's completer, shared between the supervisor (which completes it) and the job's
/// launch (which counts the child idle or running through it).
pub(crate) type SharedCompleter = Arc<std::sync::Mutex<Option<Completer<ProcessOutput>>>>;

/// Takes the completer out of `shared`, for its completion (or its drop).
fn take_completer(shared: &SharedCompleter) -> Option<Completer<ProcessOutput>> {
    shared.lock().unwrap_or_else(|e| e.into_inner()).take()
}

impl Watched {
    /// A child to watch; `pidfd` is `None` where the supervisor must poll.
    pub(crate) fn new(
        id: u64,
        child: Child,
        own_group: bool,
        pidfd: Option<OwnedFd>,
        policy: StopPolicy,
        completer: Completer<ProcessOutput>,
    ) -> Watched {
        let pid = Pid::from_child(&child);
        let token = completer.token().clone();
        // A child that exited by itself has finished its work, reaped or not: a cancel that
        // comes after the exit changes nothing (the core's table), whatever the watch.
        let unreaped = Unreaped::new(&child);
        let look = unreaped.clone();
        completer.finished_check(move || look.exited());
        let completer: SharedCompleter = Arc::new(std::sync::Mutex::new(Some(completer)));
        let pidfd = pidfd.map(Arc::new);
        let now = Instant::now();
        Watched {
            id,
            child: Some(child),
            pid,
            #[cfg(target_os = "linux")]
            target: Target::new(pid, own_group, pidfd.clone()),
            #[cfg(not(target_os = "linux"))]
            target: Target::new(pid, own_group),
            watch: match pidfd {
                Some(pidfd) => Watch::Pidfd(pidfd),
                None => Watch::Poll {
                    next: now,
                    interval: MIN_POLL,
                },
            },
            policy,
            phase: Phase::Waiting,
            token,
            cancelled_at: None,
            reaped: None,
            stdout: None,
            stderr: None,
            completer,
            cancel_link: None,
            unreaped,
        }
    }

    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// The job's completer, shared with the launch (which counts the child idle or running).
    pub(crate) fn completer(&self) -> SharedCompleter {
        self.completer.clone()
    }

    /// The job's token.
    pub(crate) fn token(&self) -> &CancelToken {
        &self.token
    }

    /// Whether the child's job was cancelled.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid.as_raw_nonzero().get().unsigned_abs()
    }

    /// Captures `stdout` and `stderr`.
    pub(crate) fn capture(&mut self, stdout: Option<Pipe>, stderr: Option<Pipe>) {
        self.stdout = stdout;
        self.stderr = stderr;
    }

    /// Keeps `link` (the job's cancel callback) until the child is finished.
    pub(crate) fn link(&mut self, link: CallbackGuard) {
        self.cancel_link = Some(link);
    }

    /// The descriptors `poll` should watch now, with what each is.
    pub(crate) fn poll_fds<'a>(&'a self, mut each: impl FnMut(Source, &'a OwnedFd)) {
        if self.child.is_some() {
            if let Watch::Pidfd(pidfd) = &self.watch {
                each(Source::Pidfd, pidfd);
            }
        }
        if let Some(fd) = self.stdout.as_ref().and_then(Pipe::fd) {
            each(Source::Stdout, fd);
        }
        if let Some(fd) = self.stderr.as_ref().and_then(Pipe::fd) {
            each(Source::Stderr, fd);
        }
    }

    /// When the supervisor must look at this child again though nothing wakes it: the kill
    /// deadline, the next look of a polled child, the end of the pipes' linger.
    pub(crate) fn next_wake(&self) -> Option<Instant> {
        match &self.reaped {
            Some((_, reaped_at)) => self.pipes_open().then(|| linger_end(*reaped_at)),
            None => {
                let deadline = match self.phase {
                    Phase::Stopping { deadline } => deadline,
                    Phase::Waiting | Phase::Killing => None,
                };
                let look = match self.watch {
                    Watch::Poll { next, .. } => Some(next),
                    Watch::Pidfd(_) => None,
                };
                deadline.into_iter().chain(look).min()
            }
        }
    }

    /// `poll` found `source` ready.
    pub(crate) fn ready(&mut self, source: Source, now: Instant, scratch: &mut [u8]) {
        match source {
            Source::Pidfd => self.look(now, true),
            Source::Stdout => {
                if let Some(pipe) = &mut self.stdout {
                    pipe.read_ready(scratch);
                }
            }
            Source::Stderr => {
                if let Some(pipe) = &mut self.stderr {
                    pipe.read_ready(scratch);
                }
            }
        }
    }

    /// Whether a stop may begin: the child is not reaped, and no stop began.
    pub(crate) fn stoppable(&self) -> bool {
        self.child.is_some() && self.phase == Phase::Waiting
    }

    /// The job's cancel reached the supervisor at `now`.
    pub(crate) fn cancel_seen(&mut self, now: Instant) {
        self.cancelled_at = Some(now);
    }

    /// Looks whether the child exited, and reaps it if so: `true` once it is gone.
    pub(crate) fn reap_if_exited(&mut self, now: Instant) -> bool {
        self.look(now, false);
        self.child.is_none()
    }

    /// Sends the stop's first signal: the polite one (and SIGCONT), or SIGKILL for a zero
    /// `kill_after`. The supervisor's inbox decides when (`Entry::stop`).
    pub(crate) fn signal_stop(&mut self, now: Instant) {
        self.phase = if self.policy.kill_after.is_zero() {
            self.target.send(Signal::KILL);
            Phase::Killing
        } else {
            self.target.send(self.policy.polite.to_rustix());
            // A stopped process (Ctrl-Z, SIGSTOP) handles the polite signal only once
            // continued.
            self.target.send(Signal::CONT);
            Phase::Stopping {
                // `None` (never) for a grace too long to add to an `Instant`.
                deadline: now.checked_add(self.policy.kill_after),
            }
        };
        self.signalled(now);
    }

    /// Escalates at the deadline, and looks at a polled child when its time came.
    pub(crate) fn tick(&mut self, now: Instant) {
        if self.child.is_none() {
            return;
        }
        if let Phase::Stopping {
            deadline: Some(deadline),
        } = self.phase
        {
            if now >= deadline {
                self.target.send(Signal::KILL);
                self.phase = Phase::Killing;
                self.signalled(now);
            }
        }
        if let Watch::Poll { next, .. } = self.watch {
            if now >= next {
                self.look(now, false);
            }
        }
    }

    /// Whether the child is reaped and its pipes have ended (or the linger has passed).
    pub(crate) fn is_done(&self, now: Instant) -> bool {
        match &self.reaped {
            Some((_, reaped_at)) => !self.pipes_open() || now >= linger_end(*reaped_at),
            None => false,
        }
    }

    /// Completes the job with the child's output; closes pipes still open.
    pub(crate) fn finish(mut self) {
        let Some((ended, reaped_at)) = self.reaped.take() else {
            return;
        };
        let output = ProcessOutput {
            pid: Some(self.pid()),
            ended,
            cancel_reason: self.token.reason(),
            cancel_to_reaped: self
                .cancelled_at
                .map(|at| reaped_at.saturating_duration_since(at)),
            stdout: self.stdout.take().map(Pipe::collect),
            stderr: self.stderr.take().map(Pipe::collect),
        };
        // Deregistered before the completion seals the token: nothing posts for this id again.
        drop(self.cancel_link.take());
        if let Some(completer) = take_completer(&self.completer) {
            completer.complete(output);
        }
    }

    fn pipes_open(&self) -> bool {
        self.stdout.as_ref().is_some_and(Pipe::is_open)
            || self.stderr.as_ref().is_some_and(Pipe::is_open)
    }

    /// A signal went out: a polled child is looked at again soon.
    fn signalled(&mut self, now: Instant) {
        if let Watch::Poll { next, interval } = &mut self.watch {
            *interval = MIN_POLL;
            *next = now + MIN_POLL;
        }
    }

    /// Looks whether the child exited (`waitid`, leaving it a zombie); if so, reaps it.
    fn look(&mut self, now: Instant, pidfd_ready: bool) {
        if self.child.is_none() {
            return;
        }
        match exited(self.pid) {
            Ok(true) => self.reap(None, now),
            Ok(false) => match &mut self.watch {
                // A readable pidfd whose child has not exited: a tracer (`strace`, a debugger)
                // holds the exit until it has seen it. A readable pidfd stays readable, so
                // `poll` would return at once again and again: look now and then instead.
                Watch::Pidfd(_) if pidfd_ready => {
                    self.watch = Watch::Poll {
                        next: now + MIN_POLL,
                        interval: MIN_POLL,
                    };
                }
                Watch::Pidfd(_) => {}
                Watch::Poll { next, interval } => {
                    *next = now + *interval;
                    *interval = interval.saturating_mul(2).min(MAX_POLL);
                }
            },
            Err(lost) => self.reap(Some(lost), now),
        }
    }

    /// Reaps the exited child, after a last SIGKILL to its group while the leader's zombie
    /// still holds the group id. With `lost` set, something else reaped it: no signal then.
    fn reap(&mut self, lost: Option<io::Error>, now: Instant) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        self.unreaped.reaping();
        let status: io::Result<ExitStatus> = match lost {
            Some(err) => Err(err),
            None => {
                self.target.kill_leftovers();
                // Exited: this returns at once.
                child.wait()
            }
        };
        let ended = match (status, self.phase) {
            (Err(err), _) => Ended::Lost(err),
            (Ok(status), Phase::Waiting) => Ended::Exited(status),
            (Ok(status), Phase::Stopping { .. }) => Ended::Stopped(status),
            (Ok(status), Phase::Killing) => Ended::Killed(status),
        };
        self.reaped = Some((ended, Instant::now().max(now)));
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        // Only when the child was never handed over, or the supervisor thread is gone: the
        // last resort, SIGKILL to the group and a reap on this thread (invariant 4).
        if let Some(mut child) = self.child.take() {
            self.target.send(Signal::KILL);
            self.unreaped.reaping();
            let _ = child.wait();
        }
        // Finishes the job as stopped (the launch's share does not keep it alive).
        drop(take_completer(&self.completer));
    }
}

/// Whether the child `pid` has exited, leaving it unreaped. An error means it is no longer
/// ours to wait for: something else reaped it.
fn exited(pid: Pid) -> io::Result<bool> {
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    loop {
        match rustix::process::waitid(WaitId::Pid(pid), options) {
            Ok(status) => return Ok(status.is_some()),
            Err(rustix::io::Errno::INTR) => {}
            Err(err) => return Err(err.into()),
        }
    }
}

fn linger_end(reaped_at: Instant) -> Instant {
    reaped_at.checked_add(PIPE_LINGER).unwrap_or(reaped_at)
}
