//! [`ProcessJob`]: the handle to a tethered child, and [`CancelAndJoin`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::process::{ChildStderr, ChildStdin, ChildStdout};
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use tethered::{AbortHandle, AbortableNative, CancelReason, CancelToken, NativeError, Tethered};

use crate::handoff::Handoff;
use crate::output::ProcessOutput;

/// A running child process, tethered to the future that awaits it.
///
/// It is a future resolving to `Result<ProcessOutput, NativeError<ProcessOutput>>` once the
/// child has been reaped. Dropping it before that cancels its job with [`CancelReason::Dropped`]: the child's
/// group gets the polite signal, SIGKILL after the grace, and the child is reaped, so a
/// timeout, a lost `select!`, an aborted task or a runtime shutdown leaves no process, no
/// zombie and no thread behind. Until the child is reaped its waiter counts in
/// [`tethered::stats()`]`.running`.
///
/// It implements [`Tethered`], so each runtime adapter's `timeout`, [`Tethered::cancel_when`]
/// and scopes take it like any other job.
///
/// - `Ok(output)`: the child was reaped, and nothing cancelled the job before;
///   [`ProcessOutput::ended`] says how it exited.
/// - `Err(NativeError::Cancelled { reason, returned: Some(output) })`: the job was cancelled
///   (dropped, timed out, a parent token, a scope) and the child was stopped and reaped;
///   `output` says how it ended and holds what it wrote until then.
/// - `Err(NativeError::Cancelled { returned: None, .. })`: for a waiter that never ran, when no
///   thread could be started for its rescue, after the child was killed and reaped on the spot.
/// - `Err(NativeError::Abandoned { .. })`: from a wrapper that stopped waiting (a `timeout`)
///   while the child was still being stopped, counted in `stats()` until it is reaped (pass
///   `&mut job` to the `timeout` and await `job` afterwards for the output); or, for a job
///   built with [`Builder::abandon_after`](tethered::Builder::abandon_after), once its grace
///   has passed.
///
/// ```
/// use std::process::Command;
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
    /// The waiter; `None` once it resolved.
    waiter: Option<AbortableNative<ProcessOutput>>,
    /// The rescue this handle awaits, when the waiter was dropped unrun.
    rescue: Option<AbortableNative<ProcessOutput>>,
    handoff: Arc<Handoff>,
    token: CancelToken,
    abort: AbortHandle,
    pid: u32,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
}

impl ProcessJob {
    pub(crate) fn new(
        waiter: AbortableNative<ProcessOutput>,
        handoff: Arc<Handoff>,
        pid: u32,
        stdin: Option<ChildStdin>,
        stdout: Option<ChildStdout>,
        stderr: Option<ChildStderr>,
    ) -> ProcessJob {
        ProcessJob {
            token: waiter.token(),
            abort: waiter.abort_handle(),
            waiter: Some(waiter),
            rescue: None,
            handoff,
            pid,
            stdin,
            stdout,
            stderr,
        }
    }

    /// The child's process id. Once the job has resolved the child is reaped, and the id may
    /// name another process: do not signal it yourself.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The job's token: cancelled when the job is, with the reason.
    pub fn token(&self) -> CancelToken {
        self.token.clone()
    }

    /// Cancels the job with `reason`: the child's group gets the polite signal now, SIGKILL
    /// after the grace. `true` if this call cancelled it; `false` if it was cancelled already
    /// or the child has been reaped (then nothing is signalled).
    pub fn cancel(&self, reason: CancelReason) -> bool {
        self.waiter
            .as_ref()
            .is_some_and(|waiter| waiter.cancel(reason))
    }

    /// A cheap, clonable handle that cancels the job from elsewhere (another task, a callback)
    /// without owning it: the same stop as [`cancel`](Self::cancel).
    ///
    /// ```
    /// use std::process::Command;
    /// use tethered::CancelReason;
    /// use tethered_process::Process;
    ///
    /// let mut command = Command::new("sleep");
    /// command.arg("60");
    /// let job = Process::new(command).spawn()?;
    /// let abort = job.abort_handle();
    /// std::thread::spawn(move || abort.cancel(CancelReason::Requested));
    /// let stopped = job.join_blocking().unwrap_err();
    /// assert_eq!(stopped.cancel_reason(), Some(&CancelReason::Requested));
    /// assert!(stopped.returned().is_some_and(|output| output.ended.is_stopped()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn abort_handle(&self) -> AbortHandle {
        self.abort.clone()
    }

    /// Cancels with [`CancelReason::Requested`], and returns a future that resolves once the
    /// child has been reaped: to `Err(NativeError::Cancelled { reason, returned: Some(output) })`
    /// with the reaped child's output, or to `Ok(output)` if the child had exited and been
    /// reaped before the cancel.
    ///
    /// ```
    /// use std::io::BufRead;
    /// use std::process::{Command, Stdio};
    /// use tethered_process::Process;
    ///
    /// let mut command = Command::new("sh");
    /// // Ignores SIGTERM, and says so once its trap is set.
    /// command.args(["-c", "trap '' TERM; echo ready; while :; do sleep 1; done"]);
    /// command.stdout(Stdio::piped());
    /// let mut job = Process::new(command)
    ///     .grace(std::time::Duration::from_millis(100))
    ///     .capture_stdout(false) // this example reads it
    ///     .spawn()?;
    /// let mut ready = String::new();
    /// std::io::BufReader::new(job.take_stdout().unwrap()).read_line(&mut ready)?;
    /// let stopped = futures_executor::block_on(job.cancel_and_join()).unwrap_err();
    /// let output = stopped.into_returned().expect("the reaped child's output");
    /// assert!(output.ended.is_killed()); // SIGTERM ignored, SIGKILL after the grace
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel_and_join(self) -> CancelAndJoin {
        self.cancel_and_join_with(CancelReason::Requested)
    }

    /// [`cancel_and_join`](Self::cancel_and_join) with a reason of your choosing.
    pub fn cancel_and_join_with(self, reason: CancelReason) -> CancelAndJoin {
        self.cancel(reason);
        CancelAndJoin { job: self }
    }

    /// Blocks the calling thread until the child has been reaped: the twin of `.await` for
    /// synchronous callers. Do not call it on an async runtime's worker thread.
    ///
    /// Like `.await` (and like [`std::process::Child::wait`]), it first closes a piped stdin
    /// that was not taken with [`take_stdin`](Self::take_stdin), so a child that reads its
    /// input to the end (`cat`, a filter) ends instead of waiting forever.
    ///
    /// # Panics
    ///
    /// If the job already resolved (it was awaited to completion).
    pub fn join_blocking(mut self) -> Result<ProcessOutput, NativeError<ProcessOutput>> {
        drop(self.stdin.take());
        if let Some(rescue) = self.rescue.take() {
            return self.rescued(rescue.join_blocking());
        }
        let waiter = self
            .waiter
            .take()
            .expect("`ProcessJob` joined after it completed");
        match waiter.join_blocking() {
            // The waiter was dropped unrun; its rescue stops the child (see `handoff.rs`).
            Err(NativeError::Cancelled {
                reason,
                returned: None,
            }) => match self.handoff.release() {
                Some(rescue) => self.rescued(rescue.join_blocking()),
                None => Err(NativeError::Cancelled {
                    reason,
                    returned: None,
                }),
            },
            other => other,
        }
    }

    /// The child's stdin, if the command piped it and it was not closed yet. Dropping it
    /// closes the pipe. Take it before awaiting or joining the job: both close a stdin left
    /// here, as [`std::process::Child::wait`] does.
    pub fn take_stdin(&mut self) -> Option<ChildStdin> {
        self.stdin.take()
    }

    /// The child's stdout, if the command piped it and [`Process::capture_stdout`] is off.
    ///
    /// [`Process::capture_stdout`]: crate::Process::capture_stdout
    pub fn take_stdout(&mut self) -> Option<ChildStdout> {
        self.stdout.take()
    }

    /// The child's stderr, if the command piped it and [`Process::capture_stderr`] is off.
    ///
    /// [`Process::capture_stderr`]: crate::Process::capture_stderr
    pub fn take_stderr(&mut self) -> Option<ChildStderr> {
        self.stderr.take()
    }

    /// A rescue's output reads as the stop it is: the rescue ran because the waiter was
    /// dropped unrun, so the job's token was cancelled, and only that token knows why.
    fn rescued(
        &self,
        result: Result<ProcessOutput, NativeError<ProcessOutput>>,
    ) -> Result<ProcessOutput, NativeError<ProcessOutput>> {
        let with_reason = |mut output: ProcessOutput| {
            output.cancel_reason = output.cancel_reason.or_else(|| self.token.reason());
            output
        };
        match (result, self.token.reason()) {
            (Ok(output), Some(reason)) => Err(NativeError::Cancelled {
                reason,
                returned: Some(Box::new(with_reason(output))),
            }),
            (result, _) => result
                .map_err(|err| err.map_returned(with_reason))
                .map(with_reason),
        }
    }

    /// Cancels the job with [`CancelReason::Timeout`] once `delay` has passed, unless the
    /// child was reaped first: the child is then stopped as for any cancel, and awaiting the
    /// job waits until it is reaped (`Err(NativeError::Cancelled { reason: Timeout, returned:
    /// Some(output) })`, with what it wrote until then).
    ///
    /// # Errors
    ///
    /// Only if the crate's timer thread is not running yet and the OS refuses to start it.
    ///
    /// ```
    /// use std::process::Command;
    /// use std::time::Duration;
    /// use tethered::CancelReason;
    /// use tethered_process::Process;
    ///
    /// let mut command = Command::new("sleep");
    /// command.arg("30");
    /// let job = Process::new(command).spawn()?;
    /// job.cancel_after(Duration::from_millis(50))?;
    /// let stopped = job.join_blocking().unwrap_err();
    /// assert_eq!(stopped.cancel_reason(), Some(&CancelReason::Timeout));
    /// assert!(stopped.returned().is_some()); // the reaped child's output
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn cancel_after(&self, delay: std::time::Duration) -> std::io::Result<()> {
        match &self.waiter {
            Some(waiter) => waiter.cancel_after(delay),
            // Resolved, or rescued after a cancel: nothing left to time out.
            None => Ok(()),
        }
    }
}

impl Future for ProcessJob {
    type Output = Result<ProcessOutput, NativeError<ProcessOutput>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        // Awaiting closes a stdin nobody took, as `Child::wait` does (see `join_blocking`).
        drop(this.stdin.take());
        loop {
            if let Some(rescue) = &mut this.rescue {
                let result = ready!(Pin::new(rescue).poll(cx));
                this.rescue = None;
                return Poll::Ready(this.rescued(result));
            }
            let waiter = this.waiter.as_mut().expect(
                "`ProcessJob` polled after it completed (in a loop of `select!`, disable the \
                 branch once it has completed, or fuse the future)",
            );
            let result = ready!(Pin::new(waiter).poll(cx));
            this.waiter = None;
            match result {
                // The waiter was dropped unrun; its rescue stops the child (see `handoff.rs`).
                Err(NativeError::Cancelled {
                    reason,
                    returned: None,
                }) => match this.handoff.release() {
                    Some(rescue) => this.rescue = Some(rescue),
                    None => {
                        return Poll::Ready(Err(NativeError::Cancelled {
                            reason,
                            returned: None,
                        }));
                    }
                },
                other => return Poll::Ready(other),
            }
        }
    }
}

impl Tethered for ProcessJob {
    type Value = ProcessOutput;

    fn cancel(&self, reason: CancelReason) -> bool {
        ProcessJob::cancel(self, reason)
    }

    fn token(&self) -> CancelToken {
        ProcessJob::token(self)
    }

    fn cancel_after(&self, delay: std::time::Duration) -> std::io::Result<()> {
        ProcessJob::cancel_after(self, delay)
    }
}

impl Drop for ProcessJob {
    fn drop(&mut self) {
        // A rescue's handle is never dropped: an unstarted job whose handle is dropped is
        // skipped, and the child would be left unreaped. Detached, it runs to the reap.
        if let Some(rescue) = self.rescue.take() {
            rescue.detach();
        }
        if let Some(rescue) = self.handoff.release() {
            rescue.detach();
        }
        // `waiter` drops next: that cancels the job with `Dropped` if it is unfinished.
    }
}

impl fmt::Debug for ProcessJob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProcessJob")
            .field("pid", &self.pid)
            .field("waiter", &self.waiter)
            .field("rescue", &self.rescue)
            .field("cancelled", &self.token.is_cancelled())
            .finish_non_exhaustive()
    }
}

/// Resolves once a cancelled child has been reaped; made by [`ProcessJob::cancel_and_join`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct CancelAndJoin {
    job: ProcessJob,
}

impl Future for CancelAndJoin {
    type Output = Result<ProcessOutput, NativeError<ProcessOutput>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.job).poll(cx)
    }
}
