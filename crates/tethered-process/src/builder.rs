//! [`Process`]: how a child is started, and how it is stopped when its job is cancelled.

use std::io;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use std::sync::Arc;

use tethered::{Builder, Completer, NativeScope};

use crate::child::StopPolicy;
use crate::job::ProcessJob;
use crate::launch::{Launch, Spec};
use crate::output::ProcessOutput;
use crate::signal::StopSignal;

/// The grace period a cancelled child gets between the polite signal and SIGKILL, unless
/// [`Process::grace`] sets another: 2 seconds.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(2);

/// Builds a tethered child process from a [`Command`], then spawns it as a [`ProcessJob`].
///
/// By default the child runs in a process group of its own; a cancel sends SIGTERM to the
/// group, then SIGKILL if the child is still there [`DEFAULT_GRACE`] later; piped stdout and
/// stderr are captured (up to [`DEFAULT_CAPTURE_LIMIT`]); one supervisor thread watches every
/// child.
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

    /// Starts the child, and hands it to the supervisor: the one thread that watches, stops
    /// and reaps every tethered child of this process (started with the first).
    ///
    /// Starting the child fails at once with its [`io::Error`] (a missing program, a
    /// permission), or if the supervisor thread cannot be started; either way no child is left.
    ///
    /// ```
    /// use std::process::Command;
    /// use tethered_process::Process;
    ///
    /// let err = Process::new(Command::new("/no/such/program")).spawn().unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::NotFound);
    /// ```
    pub fn spawn(mut self) -> io::Result<ProcessJob> {
        let program = self.program();
        let mut spec = self.spec();
        let started = spec.start()?;
        let job = self
            .job
            .take()
            .unwrap_or_else(|| Builder::new().name(format!("{program} (pid {})", started.pid())));
        let (native, completer) = job.external();
        let launch = Launch::new();
        // On an error the child was killed and reaped, and the job's handle finished stopped.
        spec.watch(started, completer, &launch)?;
        launch.hand_out()?;
        Ok(ProcessJob::new(native, launch))
    }

    /// Starts the child in `scope`: the scope cancels it with its other jobs, counts it, and
    /// names it in its shutdown report while it is being stopped.
    ///
    /// [`NativeScope::with_max_running`] bounds the scope's live children: a child is started
    /// only once the scope has a slot for it, and frees the slot when it is reaped. Until then
    /// the job waits with no process behind it: [`ProcessJob::pid`] is `None` and its pipes are
    /// not there yet ([`ProcessJob::started`] waits for them); a job cancelled while it waits
    /// never starts its child. If a slot is free, the child starts on this thread before this
    /// returns, as with [`spawn`](Self::spawn).
    ///
    /// # Errors
    ///
    /// The start's error if the child started at once and failed (a missing program), and
    /// [`SpawnError::ScopeClosed`](tethered::SpawnError::ScopeClosed) (as an [`io::Error`])
    /// once the scope is shut down. A child that waited for its slot and then fails to start
    /// resolves its job to `Ok(output)` with [`Ended::NeverStarted`](crate::Ended::NeverStarted).
    ///
    /// ```
    /// use std::process::Command;
    /// use tethered::NativeScope;
    /// use tethered_process::Process;
    ///
    /// let scope = NativeScope::new().with_max_running(1);
    /// let mut first = Command::new("sleep");
    /// first.arg("0.2");
    /// let first = Process::new(first).spawn_in(&scope)?;
    /// let second = Process::new(Command::new("true")).spawn_in(&scope)?;
    /// assert!(first.pid().is_some());
    /// assert_eq!(second.pid(), None); // waits, unspawned, for the slot `first` holds
    /// assert!(first.join_blocking()?.success());
    /// assert!(second.join_blocking()?.success());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn_in(mut self, scope: &NativeScope) -> io::Result<ProcessJob> {
        let program = self.program();
        let spec = self.spec();
        let job = self
            .job
            .take()
            .unwrap_or_else(|| Builder::new().name(program));
        let launch = Launch::new();
        let start = Start {
            spec: Some(spec),
            launch: launch.clone(),
        };
        let native = job
            .external_in(scope, move |completer| start.run(completer))
            .map_err(io::Error::other)?;
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
                grace: self.grace,
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
