//! [`SpawnError`]: why a job could not be started.

use std::fmt;
use std::io;

/// A job could not be started. Its `Display` says what refused it; the underlying error, if
/// any, is its [`source`](std::error::Error::source).
///
/// ```
/// use tethered::SpawnError;
///
/// let err = SpawnError::no_runtime("tokio", "call it from inside a runtime");
/// assert_eq!(
///     err.to_string(),
///     "no tokio runtime is running on this thread (call it from inside a runtime)"
/// );
/// ```
#[non_exhaustive]
#[derive(Debug)]
pub enum SpawnError {
    /// The operating system refused to start a thread.
    Thread(io::Error),
    /// The work itself could not be started: a child process whose program is missing or not
    /// executable, or that the operating system refused. Its source says which.
    Start(io::Error),
    /// The job has a deadline, and the crate's timer thread, which keeps it, could not be
    /// started.
    Timer(io::Error),
    /// There is no runtime to spawn on from here.
    NoRuntime {
        /// Which runtime was looked for.
        runtime: &'static str,
        /// What to do instead.
        hint: &'static str,
    },
    /// The runtime or pool is shutting down and takes no new jobs.
    Shutdown {
        /// Which runtime or pool.
        runtime: &'static str,
    },
    /// The spawner dropped the job without running it, while it was being spawned: its pool is
    /// closed or shutting down. (A spawner can report something more specific through
    /// [`Spawner::refused`](crate::Spawner::refused).)
    Rejected,
    /// The [`NativeScope`](crate::NativeScope) is shut down or dropped and takes no new jobs.
    ScopeClosed,
    /// A custom spawner's own error.
    Other(Box<dyn std::error::Error + Send + Sync + 'static>),
}

// An error value, never changed once made (its `Other` error is the spawner's: see `Cause`).
impl std::panic::UnwindSafe for SpawnError {}
impl std::panic::RefUnwindSafe for SpawnError {}

impl SpawnError {
    /// A [`SpawnError::NoRuntime`].
    pub fn no_runtime(runtime: &'static str, hint: &'static str) -> Self {
        SpawnError::NoRuntime { runtime, hint }
    }

    /// A [`SpawnError::Shutdown`].
    pub fn shutdown(runtime: &'static str) -> Self {
        SpawnError::Shutdown { runtime }
    }

    /// A [`SpawnError::Other`] wrapping a custom spawner's error.
    pub fn other(error: impl Into<Box<dyn std::error::Error + Send + Sync + 'static>>) -> Self {
        SpawnError::Other(error.into())
    }
}

impl fmt::Display for SpawnError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpawnError::Thread(_) => f.write_str("the operating system refused to start a thread"),
            SpawnError::Start(_) => f.write_str("the work could not be started"),
            SpawnError::Timer(_) => f.write_str(
                "the job has a deadline and the timer thread that keeps it could not be started",
            ),
            SpawnError::NoRuntime { runtime, hint } => {
                write!(f, "no {runtime} runtime is running on this thread ({hint})")
            }
            SpawnError::Shutdown { runtime } => {
                write!(f, "the {runtime} runtime is shutting down and takes no new jobs")
            }
            SpawnError::Rejected => f.write_str(
                "the spawner dropped the job without running it (its pool is closed or shutting down)",
            ),
            SpawnError::ScopeClosed => {
                f.write_str("the native scope is shut down and takes no new jobs")
            }
            SpawnError::Other(_) => f.write_str("the spawner failed"),
        }
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SpawnError::Thread(err) | SpawnError::Timer(err) | SpawnError::Start(err) => Some(err),
            SpawnError::Other(err) => Some(&**err),
            _ => None,
        }
    }
}
