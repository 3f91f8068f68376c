//! Starting a child and handing it to the supervisor, and [`Launch`]: what a `ProcessJob` knows
//! of its child, which a job in a full scope learns only once a slot frees.
//!
//! # Lifecycle of a launch
//!
//! ```text
//!  Waiting ──(child started)──▶ Started
//!     └──────(the start failed, or the job was cancelled first)──▶ NeverStarted
//! ```
//!
//! A job made by `Process::spawn` is `Started` (or returned its error) before its handle
//! exists; one made in a scope (`Process::spawn_with`) may wait in `Waiting` for its scope's slot.

use std::future::Future;
use std::io;
use std::os::fd::OwnedFd;
use std::pin::Pin;
use std::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use tethered::{Completer, SpawnError};

use crate::child::{SharedCompleter, StopPolicy, Watched};
use crate::output::ProcessOutput;
use crate::pipe::Pipe;
use crate::supervisor::Supervisor;
use crate::sync::{self, Mutex, MutexGuard};

/// The environment variable that makes the supervisor watch every child by polling `waitid`,
/// as it does where there are no pidfds (set to `poll`).
pub(crate) const WATCH_VAR: &str = "TETHERED_PROCESS_WATCH";

/// Everything needed to start the child.
pub(crate) struct Spec {
    pub(crate) command: Command,
    pub(crate) own_group: bool,
    pub(crate) policy: StopPolicy,
    pub(crate) capture_limit: usize,
    pub(crate) capture_stdout: bool,
    pub(crate) capture_stderr: bool,
}

/// A child just started, not yet watched.
pub(crate) struct Started {
    child: std::process::Child,
    pidfd: Option<OwnedFd>,
    supervisor: Arc<Supervisor>,
}

impl Spec {
    /// Starts the child. The supervisor is started first, so that no child exists if it cannot
    /// be.
    pub(crate) fn start(&mut self) -> Result<Started, SpawnError> {
        let supervisor = Supervisor::get().map_err(SpawnError::Thread)?;
        let child = self
            .command
            .spawn()
            .map_err(|err| SpawnError::Start(start_error(&self.command, err)))?;
        Ok(Started {
            pidfd: pidfd(&child),
            child,
            supervisor,
        })
    }

    /// Hands the started child to the supervisor, which completes `completer` once it is
    /// reaped, and publishes its pid and pipes in `launch`.
    ///
    /// # Errors
    ///
    /// If a captured pipe cannot be set non-blocking: the child is then killed and reaped.
    pub(crate) fn watch(
        &self,
        started: Started,
        completer: Completer<ProcessOutput>,
        launch: &Launch,
    ) -> Result<(), SpawnError> {
        let Started {
            mut child,
            pidfd,
            supervisor,
        } = started;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let id = supervisor.next_id();
        // From here on, dropping `watched` kills and reaps the child.
        let mut watched = Watched::new(id, child, self.own_group, pidfd, self.policy, completer);
        launch.share(watched.completer());
        let token = watched.token().clone();
        let pid = watched.pid();
        let (stdout, captured_stdout) = match stdout {
            Some(pipe) if self.capture_stdout => (
                None,
                Some(
                    Pipe::new(OwnedFd::from(pipe), self.capture_limit)
                        .map_err(SpawnError::Start)?,
                ),
            ),
            pipe => (pipe, None),
        };
        let (stderr, captured_stderr) = match stderr {
            Some(pipe) if self.capture_stderr => (
                None,
                Some(
                    Pipe::new(OwnedFd::from(pipe), self.capture_limit)
                        .map_err(SpawnError::Start)?,
                ),
            ),
            pipe => (pipe, None),
        };
        watched.capture(captured_stdout, captured_stderr);
        // Runs at once if the job was cancelled already: the supervisor takes the new child
        // before the cancels it finds beside it, so the stop is not lost.
        let link = {
            let supervisor = supervisor.clone();
            token.on_cancel(move |_reason| supervisor.cancel(id))
        };
        watched.link(link);
        launch.started(pid, stdin, stdout, stderr);
        supervisor.watch(watched);
        Ok(())
    }
}

/// `err` from starting `command`, with the program's name in its text (the OS's error names
/// none) and its kind kept: `NotFound` for a missing program, `PermissionDenied`...
fn start_error(command: &Command, err: io::Error) -> io::Error {
    #[derive(Debug)]
    struct Program {
        program: String,
        source: io::Error,
    }
    impl std::fmt::Display for Program {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "program `{}`", self.program)
        }
    }
    impl std::error::Error for Program {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }
    let program = command.get_program().to_string_lossy().into_owned();
    io::Error::new(
        err.kind(),
        Program {
            program,
            source: err,
        },
    )
}

/// A pidfd of the just-started (so unreaped) child, unless the OS refuses one (before Linux
/// 5.3, a seccomp filter) or the environment asks for polling.
#[cfg(target_os = "linux")]
fn pidfd(child: &std::process::Child) -> Option<OwnedFd> {
    if std::env::var_os(WATCH_VAR).is_some_and(|how| how == "poll") {
        return None;
    }
    let pid = rustix::process::Pid::from_child(child);
    rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()).ok()
}

#[cfg(not(target_os = "linux"))]
fn pidfd(_child: &std::process::Child) -> Option<OwnedFd> {
    None
}

/// What a `ProcessJob` knows of its child (see the module docs).
pub(crate) struct Launch {
    state: Mutex<State>,
}

struct State {
    stage: Stage,
    stdin: Option<ChildStdin>,
    stdout: Option<ChildStdout>,
    stderr: Option<ChildStderr>,
    /// The job was awaited or joined: a stdin that arrives later is closed at once.
    close_stdin: bool,
    /// The spawn returned the job's handle: a later start error goes into the job's output.
    handed_out: bool,
    /// A start error for the spawn to return (the job was not handed out yet).
    error: Option<SpawnError>,
    /// Woken when the stage leaves `Waiting`.
    waker: Option<Waker>,
    /// The started child's completer, shared with the supervisor (see `child.rs`).
    completer: Option<SharedCompleter>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    Waiting,
    Started(u32),
    NeverStarted,
}

impl Launch {
    pub(crate) fn new() -> Arc<Launch> {
        Arc::new(Launch {
            state: Mutex::new(State {
                stage: Stage::Waiting,
                stdin: None,
                stdout: None,
                stderr: None,
                close_stdin: false,
                handed_out: false,
                completer: None,
                error: None,
                waker: None,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        sync::lock(&self.state)
    }

    fn started(
        &self,
        pid: u32,
        stdin: Option<ChildStdin>,
        stdout: Option<ChildStdout>,
        stderr: Option<ChildStderr>,
    ) {
        let (waker, unwanted) = {
            let mut state = self.lock();
            state.stage = Stage::Started(pid);
            let unwanted = if state.close_stdin {
                stdin
            } else {
                state.stdin = stdin;
                None
            };
            state.stdout = stdout;
            state.stderr = stderr;
            (state.waker.take(), unwanted)
        };
        drop(unwanted);
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The start failed: the spawn returns `err` if it has not returned yet; else the job
    /// completes with it through `completer` (`None`: the job finished stopped already).
    pub(crate) fn failed(&self, err: SpawnError, completer: Option<Completer<ProcessOutput>>) {
        let (waker, late) = {
            let mut state = self.lock();
            state.stage = Stage::NeverStarted;
            let late = if state.handed_out {
                Some(err)
            } else {
                state.error = Some(err);
                None
            };
            (state.waker.take(), late)
        };
        match (late, completer) {
            (Some(err), Some(completer)) => completer.complete(ProcessOutput::never_started(err)),
            // Dropped: the job finishes stopped, and the spawn returns the error instead.
            (_, completer) => drop(completer),
        }
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The job was cancelled (or its scope closed) before the child could start.
    /// Keeps the started child's completer, to count it idle or running.
    fn share(&self, completer: SharedCompleter) {
        self.lock().completer = Some(completer);
    }

    /// Counts the child idle or running in `tethered::stats()` (a pool's worker between
    /// requests is idle).
    pub(crate) fn set_idle(&self, idle: bool) {
        let shared = self.lock().completer.clone();
        if let Some(shared) = shared {
            if let Some(completer) = &*shared.lock().unwrap_or_else(|e| e.into_inner()) {
                completer.set_idle(idle);
            }
        }
    }

    pub(crate) fn never_started(&self) {
        let waker = {
            let mut state = self.lock();
            if state.stage != Stage::Waiting {
                return;
            }
            state.stage = Stage::NeverStarted;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The spawn is about to return the job: its start error, if the start failed already.
    pub(crate) fn hand_out(&self) -> Result<(), SpawnError> {
        let mut state = self.lock();
        match state.error.take() {
            Some(err) => Err(err),
            None => {
                state.handed_out = true;
                Ok(())
            }
        }
    }

    pub(crate) fn pid(&self) -> Option<u32> {
        match self.lock().stage {
            Stage::Started(pid) => Some(pid),
            Stage::Waiting | Stage::NeverStarted => None,
        }
    }

    pub(crate) fn take_stdin(&self) -> Option<ChildStdin> {
        self.lock().stdin.take()
    }

    pub(crate) fn take_stdout(&self) -> Option<ChildStdout> {
        self.lock().stdout.take()
    }

    pub(crate) fn take_stderr(&self) -> Option<ChildStderr> {
        self.lock().stderr.take()
    }

    /// Closes a stdin nobody took, now and when it comes.
    pub(crate) fn close_stdin(&self) {
        let stdin = {
            let mut state = self.lock();
            state.close_stdin = true;
            state.stdin.take()
        };
        drop(stdin);
    }

    fn poll_started(&self, cx: &mut Context<'_>) -> Poll<Option<u32>> {
        let mut state = self.lock();
        match state.stage {
            Stage::Started(pid) => Poll::Ready(Some(pid)),
            Stage::NeverStarted => Poll::Ready(None),
            Stage::Waiting => {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Resolves once a job's child has started, to its pid, or to `None` if it never will (the
/// job was cancelled while it waited for its scope's slot, or the start failed); made by
/// [`ProcessJob::started`](crate::ProcessJob::started).
#[must_use = "futures do nothing unless polled"]
pub struct StartedFuture {
    pub(crate) launch: Arc<Launch>,
}

impl Future for StartedFuture {
    type Output = Option<u32>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<u32>> {
        self.launch.poll_started(cx)
    }
}

impl std::fmt::Debug for StartedFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StartedFuture")
            .field("pid", &self.launch.pid())
            .finish()
    }
}
