//! [`ProcessJob`]: the handle to a tethered child.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::process::{ChildStderr, ChildStdin, ChildStdout};
use std::sync::Arc;
use std::task::{Context, Poll};

use tethered::{AbortHandle, AbortableNative, CancelToken, JobId, NativeError, Tethered};

use crate::launch::{Launch, StartedFuture};
use crate::output::ProcessOutput;

/// A running child process, tethered to the future that awaits it.
///
/// It is a future resolving to `Result<ProcessOutput, NativeError<ProcessOutput>>` once the
/// child has been reaped. Dropping it before that cancels its job with [`CancelReason::Dropped`](tethered::CancelReason::Dropped): the child's
/// group gets the polite signal, SIGKILL after the grace, and the child is reaped, so a
/// timeout, a lost `select!`, an aborted task or a runtime shutdown leaves no process, no
/// zombie behind. Until the child is reaped (and its captured pipes have ended) the job counts
/// in [`tethered::stats()`]`.running`; while it waits for its scope's slot, in `queued`.
///
/// It implements [`Tethered`]: cancel it, give it a deadline ([`Tethered::cancel_after`]), time
/// it out ([`Tethered::timeout`]), race it, cancel and join it, like any other job.
///
/// - `Ok(output)`: the child was reaped, and nothing cancelled the job before;
///   [`ProcessOutput::ended`] says how it exited.
/// - `Err(NativeError::Cancelled { reason, returned: Some(output), .. })`: the job was cancelled
///   (dropped, timed out, a parent token, a scope) and the child was stopped and reaped;
///   `output` says how it ended and holds what it wrote until then.
/// - `Err(NativeError::Cancelled { returned: None, .. })`: the job was cancelled while it
///   waited for its scope's slot, and its child never started.
/// - `Err(NativeError::Abandoned { .. })`: from a wrapper that stopped waiting (a `timeout`)
///   while the child was still being stopped, counted in `stats()` until it is reaped (pass
///   `&mut job` to the `timeout` and await `job` afterwards for the output); or, for a job
///   with a [`grace`](tethered::JobOptions::grace), once the grace has passed.
///
/// ```
/// use std::process::Command;
/// use tethered::Tethered;
/// use tethered_process::Process;
///
/// let mut command = Command::new("sh");
/// command.args(["-c", "exit 7"]);
/// let mut job = Process::new(command).spawn()?;
/// let output = futures_executor::block_on(&mut job)?;
/// assert_eq!(output.status().and_then(|status| status.code()), Some(7));
/// assert!(!job.cancel(tethered::CancelReason::Requested)); // reaped: nothing to cancel
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[must_use = "dropping a `ProcessJob` stops its child"]
pub struct ProcessJob {
    job: AbortableNative<ProcessOutput>,
    launch: Arc<Launch>,
}

impl ProcessJob {
    pub(crate) fn new(job: AbortableNative<ProcessOutput>, launch: Arc<Launch>) -> ProcessJob {
        ProcessJob { job, launch }
    }

    /// The job's name: the one given with [`JobOptions::name`](tethered::JobOptions::name), or
    /// else the program's (the last part of its path), as in a shutdown report.
    ///
    /// ```
    /// use std::process::Command;
    /// use tethered::JobOptions;
    /// use tethered_process::Process;
    ///
    /// let job = Process::new(Command::new("/bin/true")).spawn()?;
    /// assert_eq!(job.name(), Some("true"));
    /// let job = Process::new(Command::new("true")).spawn_with(JobOptions::new().name("probe"))?;
    /// assert_eq!(job.name(), Some("probe"));
    /// # Ok::<(), tethered::SpawnError>(())
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.job.name()
    }

    /// The child's process id: always there for a job made by
    /// [`Process::spawn`](crate::Process::spawn), which starts the child before it returns;
    /// `None` while a job waits for a slot in its scope (see
    /// [`Process::spawn_with`](crate::Process::spawn_with)), or if it never started. Once the job
    /// has resolved the child is reaped, and the id may name another process: do not signal
    /// it yourself.
    pub fn pid(&self) -> Option<u32> {
        self.launch.pid()
    }

    /// Resolves once the child has started, to its pid: at once for a job whose child
    /// started when it was spawned; for one that waits for its scope's slot, when it gets it.
    /// `None` if it never will (cancelled while it waited, or its start failed). Its pipes
    /// are there to take from then on.
    ///
    /// ```
    /// use std::process::Command;
    /// use tethered_process::Process;
    ///
    /// let job = Process::new(Command::new("true")).spawn()?;
    /// let pid = futures_executor::block_on(job.started());
    /// assert_eq!(pid, job.pid());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn started(&self) -> StartedFuture {
        StartedFuture {
            launch: self.launch.clone(),
        }
    }

    /// Blocks the calling thread until the child has been reaped: the twin of `.await` for
    /// synchronous callers. Do not call it on an async runtime's worker thread.
    ///
    /// Like `.await` (and like [`std::process::Child::wait`]), it first closes a piped stdin
    /// that was not taken with [`take_stdin`](Self::take_stdin), so a child that reads its
    /// input to the end (`cat`, a filter) ends instead of waiting forever.
    ///
    /// # Errors
    ///
    /// The job's stop, as the handle reads it (the crate's table): `Cancelled` with the output
    /// once a cancel stopped the child, `Abandoned` past a grace.
    ///
    /// # Panics
    ///
    /// If the job already resolved (it was awaited to completion).
    pub fn join_blocking(self) -> Result<ProcessOutput, NativeError<ProcessOutput>> {
        self.launch.close_stdin();
        self.job.join_blocking()
    }

    /// The child's stdin, if the command piped it and it was not closed yet. Dropping it
    /// closes the pipe. Take it before awaiting or joining the job: both close a stdin left
    /// here, as [`std::process::Child::wait`] does.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.launch.take_stdin()
    }

    /// The child's stdout, if the command piped it and [`Process::capture_stdout`] is off.
    ///
    /// [`Process::capture_stdout`]: crate::Process::capture_stdout
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.launch.take_stdout()
    }

    /// The child's stderr, if the command piped it and [`Process::capture_stderr`] is off.
    ///
    /// [`Process::capture_stderr`]: crate::Process::capture_stderr
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.launch.take_stderr()
    }

    /// Counts the child as idle (`true`: a pool's worker between requests) or running in
    /// [`tethered::stats()`].
    pub(crate) fn set_idle(&self, idle: bool) {
        self.launch.set_idle(idle);
    }
}

impl Future for ProcessJob {
    type Output = Result<ProcessOutput, NativeError<ProcessOutput>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Awaiting closes a stdin nobody took, as `Child::wait` does (see `join_blocking`).
        self.launch.close_stdin();
        Pin::new(&mut self.job).poll(cx)
    }
}

/// A child's job is a tethered handle like any other: cancel it (the child is stopped),
/// give it a deadline, time it out, race it, cancel and join it.
impl Tethered for ProcessJob {
    type Value = ProcessOutput;

    fn id(&self) -> JobId {
        self.job.id()
    }

    fn token(&self) -> &CancelToken {
        self.job.token()
    }

    fn is_finished(&self) -> bool {
        self.job.is_finished()
    }

    fn abort_handle(&self) -> AbortHandle {
        self.job.abort_handle()
    }
}

impl fmt::Debug for ProcessJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessJob")
            .field("pid", &self.pid())
            .field("job", &self.job)
            .finish_non_exhaustive()
    }
}
