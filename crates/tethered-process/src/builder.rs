//! [`Process`]: how a child is started, and how it is stopped when its job is cancelled.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use std::sync::Arc;

use tethered::{Completer, ExternalPlacement, JobOptions, SpawnError};

use crate::child::StopPolicy;
use crate::job::ProcessJob;
use crate::launch::{Launch, Spec};
use crate::output::ProcessOutput;
use crate::signal::StopSignal;

/// How long a cancelled child gets between the polite signal and SIGKILL, unless
/// [`Process::kill_after`] sets another: 2 seconds.
pub const DEFAULT_KILL_AFTER: Duration = Duration::from_secs(2);

/// Builds a tethered child process from a [`Command`], then spawns it as a [`ProcessJob`].
///
/// By default the child runs in a process group of its own; a cancel sends SIGTERM to the
/// group, then SIGKILL if the child is still there [`DEFAULT_KILL_AFTER`] later; piped stdout
/// and stderr are captured (up to [`DEFAULT_CAPTURE_LIMIT`]); one supervisor thread watches
/// every child.
///
/// ```
/// use std::process::Command;
/// use std::time::Duration;
/// use tethered::Tethered;
/// use tethered_process::{Process, StopSignal};
///
/// let mut command = Command::new("sleep");
/// command.arg("60");
/// let job = Process::new(command)
///     .kill_after(Duration::from_millis(500)) // SIGKILL half a second after the polite signal
///     .polite_signal(StopSignal::Int)         // Ctrl-C rather than SIGTERM
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
    kill_after: Duration,
    own_group: bool,
    polite: StopSignal,
    capture_limit: usize,
    capture_stdout: bool,
    capture_stderr: bool,
}

/// How many bytes of each captured pipe a [`Process`] keeps unless
/// [`capture_limit`](Process::capture_limit) says otherwise: 16 MiB.
pub const DEFAULT_CAPTURE_LIMIT: usize = 16 << 20;

impl Process {
    /// A tethered child that `command` will start.
    pub fn new(command: Command) -> Process {
        Process {
            command,
            kill_after: DEFAULT_KILL_AFTER,
            own_group: true,
            polite: StopSignal::Term,
            capture_limit: DEFAULT_CAPTURE_LIMIT,
            capture_stdout: true,
            capture_stderr: true,
        }
    }

    /// How long a cancelled child gets between the polite signal and SIGKILL.
    /// [`Duration::ZERO`] sends SIGKILL at once; [`Duration::MAX`] (or any time too long to add
    /// to an `Instant`) never escalates, so the job waits for as long as the child takes to
    /// stop. (A job's [`grace`](tethered::JobOptions::grace), by contrast, is how long its
    /// caller waits after a cancel: give both to bound the wait.)
    pub fn kill_after(mut self, kill_after: Duration) -> Process {
        self.kill_after = kill_after;
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
    ///
    /// Only a pipe is captured: set `command.stdout(Stdio::piped())` (and `stderr` alike). A
    /// `Command`'s stdio is inherited unless set, which this crate leaves as it is: the child
    /// then writes to this process's own stdout, and `output.stdout` is `None`.
    pub fn capture_stdout(mut self, capture: bool) -> Process {
        self.capture_stdout = capture;
        self
    }

    /// Like [`capture_stdout`](Self::capture_stdout), for stderr.
    pub fn capture_stderr(mut self, capture: bool) -> Process {
        self.capture_stderr = capture;
        self
    }

    /// Starts the child, and hands it to the supervisor: the one thread that watches, stops
    /// and reaps every tethered child of this process (started with the first). The job is
    /// named after the program. The shortcut for [`spawn_with`](Self::spawn_with) with
    /// `JobOptions::new()`.
    ///
    /// # Errors
    ///
    /// [`SpawnError::Start`] with the child's start error (a missing program, a permission:
    /// its `kind()` says which, its text names the program), or [`SpawnError::Thread`] if the
    /// supervisor thread cannot be started; either way no child is left. A [`SpawnError`], as
    /// from every entry point of the family.
    ///
    /// ```
    /// use std::process::Command;
    /// use tethered::SpawnError;
    /// use tethered_process::Process;
    ///
    /// let err = Process::new(Command::new("/no/such/program")).spawn().unwrap_err();
    /// assert!(matches!(&err, SpawnError::Start(io) if io.kind() == std::io::ErrorKind::NotFound));
    /// assert_eq!(
    ///     tethered::__private::error_chain(&err),
    ///     "the work could not be started: program `/no/such/program`: No such file or directory (os error 2)"
    /// );
    /// ```
    pub fn spawn(self) -> Result<ProcessJob, SpawnError> {
        self.spawn_with(JobOptions::new())
    }

    /// Starts the child with [`JobOptions`]: a name (the program's unless given), a deadline
    /// (the child is stopped at it), a grace (how long the caller waits after a cancel for
    /// the child to be reaped), the tokens it is a child of, and a placement:
    /// [`Unplaced`](tethered::Unplaced) starts it now; [`in_scope`](JobOptions::in_scope)
    /// starts it when the scope has a slot (so
    /// [`NativeScope::with_max_running`](tethered::NativeScope::with_max_running) bounds how
    /// many children are alive), and a job cancelled while it waits never starts its child. A
    /// child runs in its own process, so a placement on a spawner does not compile.
    ///
    /// # Errors
    ///
    /// For a child started now, [`spawn`](Self::spawn)'s; [`SpawnError::ScopeClosed`] for a
    /// scope that is shut down; [`SpawnError::Timer`] for a deadline the timer could not be
    /// had for. A child in a scope whose start fails later resolves to
    /// `Ended::NeverStarted`, with the same error.
    ///
    /// A job cancelled before its child starts (a zero `timeout`, a `deadline` already past, a
    /// parent token cancelled already, or a cancel while it waits for its scope's slot) never
    /// starts it, as a closure never runs: the handle reads `Cancelled { returned: None, .. }`
    /// and [`ProcessJob::pid`] stays `None`.
    ///
    /// ```
    /// use std::process::Command;
    /// use tethered::{CancelReason, CancelSource, JobOptions};
    /// use tethered_process::Process;
    ///
    /// let request = CancelSource::new();
    /// let mut command = Command::new("sleep");
    /// command.arg("60");
    /// let options = JobOptions::new().name("render").child_of(&request.token());
    /// let job = Process::new(command).spawn_with(options)?;
    /// request.cancel(CancelReason::Shutdown); // the whole request goes away
    /// let stopped = job.join_blocking().unwrap_err();
    /// assert_eq!(stopped.cancel_reason(), Some(CancelReason::Shutdown));
    /// let output = stopped.into_returned().expect("the reaped child's output");
    /// assert_eq!(output.cancel_reason, Some(CancelReason::Shutdown));
    /// assert!(output.ended.is_stopped());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// ```compile_fail
    /// # use tethered::{JobOptions, ThreadSpawner};
    /// # use tethered_process::Process;
    /// // A child process runs in its own process: no spawner runs it.
    /// let options = JobOptions::new().on(ThreadSpawner::new());
    /// let _ = Process::new(std::process::Command::new("true")).spawn_with(options);
    /// ```
    pub fn spawn_with<P: ExternalPlacement>(
        mut self,
        options: JobOptions<P>,
    ) -> Result<ProcessJob, SpawnError> {
        let options = options.named_or(self.program());
        let spec = self.spec();
        let launch = Launch::new();
        let start = Start {
            spec: Some(spec),
            launch: launch.clone(),
        };
        let native = tethered::spawn_external(options, move |completer| start.run(completer))?;
        // A child started now that failed to start: its error is the spawn's.
        launch.hand_out()?;
        Ok(ProcessJob::new(native, launch))
    }

    fn program(&self) -> String {
        Path::new(self.command.get_program())
            .file_name()
            .unwrap_or(self.command.get_program())
            .to_string_lossy()
            .into_owned()
    }

    fn spec(&mut self) -> Spec {
        let mut command = std::mem::replace(&mut self.command, Command::new(""));
        if self.own_group {
            // The child leads a new group whose id is its pid.
            command.process_group(0);
        }
        Spec {
            command,
            own_group: self.own_group,
            policy: StopPolicy {
                kill_after: self.kill_after,
                polite: self.polite,
            },
            capture_limit: self.capture_limit,
            capture_stdout: self.capture_stdout,
            capture_stderr: self.capture_stderr,
        }
    }
}

/// The start of a child in a scope, once its slot is free. Dropped uncalled (the job was
/// cancelled while it waited, or the scope closed), it tells the job's launch so.
struct Start {
    spec: Option<Spec>,
    launch: Arc<Launch>,
}

impl Start {
    fn run(mut self, completer: Completer<ProcessOutput>) {
        let Some(mut spec) = self.spec.take() else {
            return;
        };
        match spec.start() {
            Ok(started) => {
                if let Err(err) = spec.watch(started, completer, &self.launch) {
                    self.launch.failed(err, None);
                }
            }
            Err(err) => self.launch.failed(err, Some(completer)),
        }
    }
}

impl Drop for Start {
    fn drop(&mut self) {
        self.launch.never_started();
    }
}
