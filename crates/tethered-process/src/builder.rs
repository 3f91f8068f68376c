//! [`Process`]: how a child is started, and how it is stopped when its job is cancelled.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use tethered::{Builder, NativeScope, Spawner, ThreadSpawner};

use crate::capture::Capture;
use crate::handoff::Handoff;
use crate::job::ProcessJob;
use crate::launch::{self, Place};
use crate::live::{Live, StopPolicy};
use crate::signal::StopSignal;
use crate::tether::Tether;

/// The grace period a cancelled child gets between the polite signal and SIGKILL, unless
/// [`Process::grace`] sets another: 2 seconds.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

/// Builds a tethered child process from a [`Command`], then spawns it as a [`ProcessJob`].
///
/// By default the child runs in a process group of its own; a cancel sends SIGTERM to the
/// group, then SIGKILL if the child is still there [`DEFAULT_GRACE`] later; piped stdout and
/// stderr are captured in full; the waiter runs on a thread of its own.
///
/// ```
/// use std::process::Command;
/// use std::time::Duration;
/// use tethered_process::{Process, StopSignal};
///
/// let mut command = Command::new("sleep");
/// command.arg("60");
/// let job = Process::new(command)
///     .grace(Duration::from_millis(500)) // SIGKILL half a second after the polite signal
///     .polite_signal(StopSignal::Int)    // Ctrl-C rather than SIGTERM
///     .spawn()?;
/// let stopped = futures_executor::block_on(job.cancel_and_join()).unwrap_err();
/// // Stopped by the cancel: the error carries the reaped child's output.
/// let output = stopped.into_returned().expect("the reaped child's output");
/// assert!(output.ended.is_stopped());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use = "a builder does nothing until one of its spawn methods is called"]
pub struct Process {
    command: Command,
    grace: Duration,
    own_group: bool,
    polite: StopSignal,
    capture_limit: usize,
    capture_stdout: bool,
    capture_stderr: bool,
    job: Option<Builder>,
}

/// How many bytes of each captured pipe a [`Process`] keeps unless
/// [`capture_limit`](Process::capture_limit) says otherwise: 16 MiB.
pub const DEFAULT_CAPTURE_LIMIT: usize = 16 << 20;

impl Process {
    /// A tethered child that `command` will start.
    pub fn new(command: Command) -> Process {
        Process {
            command,
            grace: DEFAULT_GRACE,
            own_group: true,
            polite: StopSignal::Term,
            capture_limit: DEFAULT_CAPTURE_LIMIT,
            capture_stdout: true,
            capture_stderr: true,
            job: None,
        }
    }

    /// The time between the polite signal and SIGKILL. [`Duration::ZERO`] sends SIGKILL at once;
    /// [`Duration::MAX`] (or any grace too long to add to an `Instant`) never escalates, so the
    /// job waits for as long as the child takes to stop.
    pub fn grace(mut self, grace: Duration) -> Process {
        self.grace = grace;
        self
    }

    /// Whether the child runs in a process group of its own (the default), so that its signals
    /// reach everything it started, and whatever is left of the group when it exits is killed.
    ///
    /// With `false` the child stays in this process's group and only the child itself is
    /// signalled: its own children live on (and may hold captured pipes open; see
    /// [`Captured::still_open`](crate::Captured::still_open)). Choose that for a child that must
    /// read from the terminal: a child in a group of its own is in the terminal's background,
    /// and stops (SIGTTIN) when it reads from it.
    pub fn own_group(mut self, own_group: bool) -> Process {
        self.own_group = own_group;
        self
    }

    /// The signal that asks a cancelled child to stop (default [`StopSignal::Term`]).
    pub fn polite_signal(mut self, signal: StopSignal) -> Process {
        self.polite = signal;
        self
    }

    /// Keeps at most `bytes` of each captured pipe ([`DEFAULT_CAPTURE_LIMIT`], 16 MiB, unless
    /// set: a child that floods its output, `yes` say, cannot grow this process's memory
    /// without bound). The rest is still read, so the child never blocks on a full pipe, and
    /// discarded; [`Captured::truncated`](crate::Captured::truncated) says so. `usize::MAX`
    /// keeps everything.
    ///
    /// ```
    /// use std::process::{Command, Stdio};
    /// use tethered_process::Process;
    ///
    /// let mut command = Command::new("sh");
    /// command.args(["-c", "head -c 100000 /dev/zero"]).stdout(Stdio::piped());
    /// let output = Process::new(command).capture_limit(10).spawn()?.join_blocking()?;
    /// let stdout = output.stdout.unwrap();
    /// assert_eq!((stdout.bytes.len(), stdout.total, stdout.truncated), (10, 100_000, true));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn capture_limit(mut self, bytes: usize) -> Process {
        self.capture_limit = bytes;
        self
    }

    /// Whether a piped stdout is captured into [`ProcessOutput::stdout`](crate::ProcessOutput::stdout)
    /// (the default) or left to the caller, through [`ProcessJob::take_stdout`], to read while the
    /// child runs (as a worker's replies are). A pipe left to the caller must be read, or the
    /// child blocks once it is full.
    pub fn capture_stdout(mut self, capture: bool) -> Process {
        self.capture_stdout = capture;
        self
    }

    /// Like [`capture_stdout`](Self::capture_stdout), for stderr.
    pub fn capture_stderr(mut self, capture: bool) -> Process {
        self.capture_stderr = capture;
        self
    }

    /// The options of the job that waits for the child, from the core's [`Builder`]: its name,
    /// a parent token ([`Builder::child_of`]). Without this, the job is named after the program
    /// and its pid.
    ///
    /// ```
    /// use std::process::Command;
    /// use tethered::{AbortableNative, CancelReason, CancelSource};
    /// use tethered_process::Process;
    ///
    /// let request = CancelSource::new();
    /// let mut command = Command::new("sleep");
    /// command.arg("60");
    /// let job = Process::new(command)
    ///     .job(AbortableNative::builder().name("render").child_of(&request.token()))
    ///     .spawn()?;
    /// request.cancel(CancelReason::Shutdown); // the whole request goes away
    /// let stopped = job.join_blocking().unwrap_err();
    /// assert_eq!(stopped.cancel_reason(), Some(&CancelReason::Shutdown));
    /// let output = stopped.into_returned().expect("the reaped child's output");
    /// assert_eq!(output.cancel_reason, Some(CancelReason::Shutdown));
    /// assert!(output.ended.is_stopped());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn job(mut self, job: Builder) -> Process {
        self.job = Some(job);
        self
    }

    /// Starts the child, and a thread of its own that waits for it.
    ///
    /// Starting the child fails at once with its [`io::Error`] (a missing program, a
    /// permission), before anything else is started.
    ///
    /// ```
    /// use std::process::Command;
    /// use tethered_process::Process;
    ///
    /// let err = Process::new(Command::new("/no/such/program")).spawn().unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    /// ```
    pub fn spawn(self) -> io::Result<ProcessJob> {
        self.spawn_on(&ThreadSpawner::new())
    }

    /// Starts the child, and its waiter through `spawner` (a runtime's blocking pool, say:
    /// `tethered_tokio::TokioSpawner`). The waiter holds a pool thread until the child is
    /// reaped. If the spawner refuses the waiter, the child is killed and reaped before the
    /// error (an [`io::Error`] wrapping the [`SpawnError`](tethered::SpawnError)) is returned.
    pub fn spawn_on<S: Spawner + ?Sized>(self, spawner: &S) -> io::Result<ProcessJob> {
        self.launch(Place::On(spawner))
    }

    /// Starts the child, and its waiter in `scope`: the scope cancels it with the others, and
    /// its shutdown report names it while it is being stopped.
    pub fn spawn_in(self, scope: &NativeScope) -> io::Result<ProcessJob> {
        self.launch(Place::<'_, ThreadSpawner>::In(scope))
    }

    fn launch<S: Spawner + ?Sized>(mut self, place: Place<'_, S>) -> io::Result<ProcessJob> {
        if self.own_group {
            // The child leads a new group whose id is its pid.
            self.command.process_group(0);
        }
        let program = Path::new(self.command.get_program())
            .file_name()
            .unwrap_or(self.command.get_program())
            .to_string_lossy()
            .into_owned();
        let mut child = self.command.spawn()?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let policy = StopPolicy {
            grace: self.grace,
            polite: self.polite,
        };
        let mut live = Live::new(child, self.own_group, policy);
        let pid = live.pid();

        let (stdout, captured_stdout) = match stdout {
            Some(pipe) if self.capture_stdout => (
                None,
                Some(start_capture(
                    &mut live,
                    pipe,
                    self.capture_limit,
                    "stdout",
                )?),
            ),
            pipe => (pipe, None),
        };
        let (stderr, captured_stderr) = match stderr {
            Some(pipe) if self.capture_stderr => (
                None,
                Some(start_capture(
                    &mut live,
                    pipe,
                    self.capture_limit,
                    "stderr",
                )?),
            ),
            pipe => (pipe, None),
        };
        live.capture(captured_stdout, captured_stderr);

        let job = self
            .job
            .unwrap_or_else(|| launch::default_job(format!("{program} (pid {pid})")));
        let handoff = Handoff::new(launch::rescue);
        let submitted = launch::waiter(job, place, Tether::waiter(live, handoff.clone()));
        let dropped_unrun = handoff.handed();
        let native = match (submitted, dropped_unrun) {
            (Ok(native), None) => native,
            (Ok(native), Some(live)) => {
                // Cancelled before it could start (a parent token cancelled already): the
                // job's handle resolves at once, and the rescue stops the child.
                if let Some(rescue) = launch::rescue(live) {
                    handoff.rescued(rescue);
                }
                native
            }
            (Err(err), Some(mut live)) => {
                live.kill_now();
                return Err(io::Error::other(err));
            }
            // Not reached with the core's spawn: a refused job is stopped at the refusal, its
            // closure dropped, which hands the child over (the arm above). Kept for a waiter
            // that some future path refuses without dropping: it is rescued when dropped.
            (Err(err), None) => return Err(io::Error::other(err)),
        };
        Ok(ProcessJob::new(native, handoff, pid, stdin, stdout, stderr))
    }
}

/// Starts a reader for `pipe`; on failure, kills and reaps the child first.
fn start_capture<R: std::io::Read + Send + 'static>(
    live: &mut Live,
    pipe: R,
    limit: usize,
    which: &str,
) -> io::Result<Capture> {
    Capture::start(pipe, limit, &format!("{which} of {}", live.pid())).inspect_err(|_| {
        live.kill_now();
    })
}
