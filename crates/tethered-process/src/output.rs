//! [`ProcessOutput`]: how a tethered child ended, and what it wrote.

use std::fmt;
use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use tethered::CancelReason;

/// How a tethered child ended.
#[non_exhaustive]
#[derive(Debug)]
pub enum Ended {
    /// It exited by itself, before any cancel. A cancel that comes after the exit changes
    /// nothing, even before the supervisor has reaped the child: the cancel returns `false`
    /// and the job reads `Ok` with this, whichever way the supervisor watches the child (a
    /// pidfd, or polling).
    Exited(ExitStatus),
    /// It was cancelled, got the polite signal, and was gone within the grace period.
    Stopped(ExitStatus),
    /// It was cancelled and got SIGKILL: it was still there when the grace period ended (or
    /// the grace was [`Duration::ZERO`]).
    Killed(ExitStatus),
    /// Something else in this process reaped the child (a `waitpid(-1)` elsewhere, or
    /// SIGCHLD set to `SIG_IGN`), so its status is unknown. No signal was sent after that was
    /// noticed: the pid may belong to another process by now.
    Lost(io::Error),
    /// The job waited for a slot in its scope ([`Process::spawn_with`](crate::Process::spawn_with) with `in_scope`),
    /// and once it had one the child could not be started (a missing program, a permission):
    /// the spawn's error. A start that fails while the job is spawned is the spawn's error
    /// instead.
    NeverStarted(tethered::SpawnError),
}

impl Ended {
    /// The exit status, unless the child was [`Lost`](Ended::Lost) or never started.
    pub fn status(&self) -> Option<ExitStatus> {
        match self {
            Ended::Exited(status) | Ended::Stopped(status) | Ended::Killed(status) => Some(*status),
            Ended::Lost(_) | Ended::NeverStarted(_) => None,
        }
    }

    /// Whether it exited by itself.
    pub fn is_exited(&self) -> bool {
        matches!(self, Ended::Exited(_))
    }

    /// Whether the polite signal stopped it within the grace period.
    pub fn is_stopped(&self) -> bool {
        matches!(self, Ended::Stopped(_))
    }

    /// Whether it took SIGKILL.
    pub fn is_killed(&self) -> bool {
        matches!(self, Ended::Killed(_))
    }
}

impl fmt::Display for Ended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ended::Exited(status) => write!(f, "exited by itself ({status})"),
            Ended::Stopped(status) => {
                write!(
                    f,
                    "stopped by the polite signal within the grace ({status})"
                )
            }
            Ended::Killed(status) => write!(f, "killed after the grace ({status})"),
            Ended::Lost(err) => write!(f, "reaped elsewhere in this process ({err})"),
            Ended::NeverStarted(err) => write!(
                f,
                "could not be started ({})",
                tethered::__private::error_chain(err)
            ),
        }
    }
}

/// What the child wrote to a piped stdout or stderr.
///
/// Past the [capture limit](crate::Process::capture_limit) the pipe is still read (so the child
/// never blocks on it) and the rest is discarded.
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Captured {
    /// The bytes kept, at most the capture limit.
    pub bytes: Vec<u8>,
    /// How many bytes were read in all, kept or not.
    pub total: u64,
    /// Whether bytes were discarded because of the limit.
    pub truncated: bool,
    /// Whether the pipe was still open when the output was collected: a process outside the
    /// child's process group (one that left it, or any descendant when the child does not run
    /// in a group of its own) still held it, and what it writes from now on is discarded.
    pub still_open: bool,
}

impl Captured {
    /// The bytes as text, with invalid UTF-8 replaced.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        String::from_utf8_lossy(&self.bytes)
    }
}

/// How a tethered child ended, and what it wrote to the pipes that were captured.
///
/// ```
/// use std::process::{Command, Stdio};
/// use tethered_process::Process;
///
/// let mut command = Command::new("sh");
/// command.args(["-c", "echo out; echo err >&2; exit 3"]);
/// command.stdout(Stdio::piped()).stderr(Stdio::piped());
/// let output = Process::new(command).spawn()?.join_blocking()?;
/// assert!(output.ended.is_exited());
/// assert_eq!(output.status().and_then(|status| status.code()), Some(3));
/// assert_eq!(output.stdout.unwrap().text(), "out\n");
/// assert_eq!(output.stderr.unwrap().text(), "err\n");
/// assert_eq!(output.cancel_reason, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[non_exhaustive]
#[derive(Debug)]
pub struct ProcessOutput {
    /// The child's process id (no longer its own: the child has been reaped); `None` if it
    /// never started ([`Ended::NeverStarted`]).
    pub pid: Option<u32>,
    /// How it ended, with its exit status.
    pub ended: Ended,
    /// Why the job was cancelled, if it was (also when the cancel came too late to matter).
    pub cancel_reason: Option<CancelReason>,
    /// From the moment the waiter saw the cancel to the moment it reaped the child.
    pub cancel_to_reaped: Option<Duration>,
    /// The captured stdout, if it was piped and captured.
    pub stdout: Option<Captured>,
    /// The captured stderr, if it was piped and captured.
    pub stderr: Option<Captured>,
}

impl ProcessOutput {
    /// The exit status, unless the child was [`Ended::Lost`] or [`Ended::NeverStarted`].
    pub fn status(&self) -> Option<ExitStatus> {
        self.ended.status()
    }

    /// The output of a child that could not be started after waiting for its scope's slot.
    #[cfg(unix)]
    pub(crate) fn never_started(err: tethered::SpawnError) -> ProcessOutput {
        ProcessOutput {
            pid: None,
            ended: Ended::NeverStarted(err),
            cancel_reason: None,
            cancel_to_reaped: None,
            stdout: None,
            stderr: None,
        }
    }

    /// Whether it exited by itself with status 0.
    pub fn success(&self) -> bool {
        matches!(&self.ended, Ended::Exited(status) if status.success())
    }
}
