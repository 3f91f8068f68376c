//! [`NativeError`], [`JobPanic`] and [`SpawnError`].

use std::any::Any;
use std::fmt;
use std::io;
use std::time::Duration;

use crate::reason::CancelReason;
use crate::sync::DataMutex;

/// Why an [`AbortableNative`](crate::AbortableNative) produced no value.
///
/// ```
/// use tethered::{AbortableNative, NativeError};
///
/// let job = AbortableNative::spawn(|_token| -> u32 { panic!("bad input") });
/// let err = job.join_blocking().unwrap_err();
/// assert!(err.is_panic());
/// assert_eq!(err.to_string(), "native job panicked: bad input");
/// let payload = err.into_panic();
/// assert_eq!(payload.downcast_ref::<&str>(), Some(&"bad input"));
/// ```
#[non_exhaustive]
#[derive(Debug)]
pub enum NativeError {
    /// No result because of a cancel: the job was cancelled before its closure started (so the
    /// closure never ran), the spawner dropped it unrun (reported as
    /// [`CancelReason::Shutdown`]), or the caller stopped waiting (an adapter's `timeout`).
    ///
    /// A closure that starts and then sees its token cancelled returns normally: whatever it
    /// returns arrives as `Ok`.
    Cancelled(CancelReason),
    /// The closure panicked; the panic was caught on the native thread.
    Panicked(JobPanic),
    /// The job was cancelled and its closure was still running `grace` later, so the handle
    /// stopped waiting (the job was built with
    /// [`Builder::abandon_after`](crate::Builder::abandon_after)). The closure runs on,
    /// counted in [`stats()`](crate::stats)`.detached` until it returns.
    Abandoned {
        /// Why the job was cancelled.
        reason: CancelReason,
        /// How long the handle waited after the cancel.
        grace: Duration,
    },
}

impl NativeError {
    /// Whether the job produced no result because of a cancel.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, NativeError::Cancelled(_))
    }

    /// Whether the closure panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self, NativeError::Panicked(_))
    }

    /// The cancel's reason, if this is [`NativeError::Cancelled`] or [`NativeError::Abandoned`].
    pub fn cancel_reason(&self) -> Option<&CancelReason> {
        match self {
            NativeError::Cancelled(reason) | NativeError::Abandoned { reason, .. } => Some(reason),
            NativeError::Panicked(_) => None,
        }
    }

    /// Whether the handle stopped waiting for a cancelled job that kept running.
    pub fn is_abandoned(&self) -> bool {
        matches!(self, NativeError::Abandoned { .. })
    }

    /// The panic payload, or the error itself if it is not a panic.
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, NativeError> {
        match self {
            NativeError::Panicked(panic) => Ok(panic.into_payload()),
            other => Err(other),
        }
    }

    /// The panic payload, e.g. to resume the panic with [`std::panic::resume_unwind`].
    ///
    /// # Panics
    ///
    /// If the error is not a panic; check [`is_panic`](Self::is_panic) or use
    /// [`try_into_panic`](Self::try_into_panic).
    #[track_caller]
    pub fn into_panic(self) -> Box<dyn Any + Send + 'static> {
        self.try_into_panic()
            .unwrap_or_else(|err| panic!("`NativeError::into_panic` called on `{err}`"))
    }
}

impl fmt::Display for NativeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NativeError::Cancelled(reason) => write!(f, "native job cancelled: {reason}"),
            NativeError::Panicked(panic) => match panic.message() {
                Some(message) => write!(f, "native job panicked: {message}"),
                None => f.write_str("native job panicked (with a payload that is not a string)"),
            },
            NativeError::Abandoned { reason, grace } => write!(
                f,
                "native job abandoned: cancelled ({reason}) and still running {grace:?} later; \
                 it runs on, counted as detached"
            ),
        }
    }
}

impl std::error::Error for NativeError {}

/// A [`Cancelled`](crate::Cancelled) from [`CancelToken::check`](crate::CancelToken::check) is a
/// [`NativeError::Cancelled`], so a closure returning `Result<_, Cancelled>` composes with `?`.
///
/// ```
/// use tethered::{AbortableNative, Cancelled, NativeError};
///
/// fn run() -> Result<u32, NativeError> {
///     let job = AbortableNative::spawn(|token| -> Result<u32, Cancelled> {
///         token.check()?;
///         Ok(7)
///     });
///     Ok(job.join_blocking()??)
/// }
/// assert_eq!(run().unwrap(), 7);
/// ```
impl From<crate::Cancelled> for NativeError {
    fn from(cancelled: crate::Cancelled) -> Self {
        NativeError::Cancelled(cancelled.into_reason())
    }
}

/// A panic caught on a native thread: its message and payload.
pub struct JobPanic {
    message: Option<String>,
    // Only here to make the error `Sync`; never contended.
    payload: DataMutex<Box<dyn Any + Send + 'static>>,
}

impl JobPanic {
    pub(crate) fn new(payload: Box<dyn Any + Send + 'static>) -> Self {
        let message = if let Some(text) = payload.downcast_ref::<&'static str>() {
            Some((*text).to_owned())
        } else {
            payload.downcast_ref::<String>().cloned()
        };
        JobPanic {
            message,
            payload: DataMutex::new(payload),
        }
    }

    /// The panic message, when the payload is a string (as with `panic!("...")`).
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// The payload, e.g. for [`std::panic::resume_unwind`].
    pub fn into_payload(self) -> Box<dyn Any + Send + 'static> {
        self.payload
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl fmt::Debug for JobPanic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JobPanic")
            .field("message", &self.message)
            .finish_non_exhaustive()
    }
}

/// A job could not be started.
///
/// ```
/// use tethered::SpawnError;
///
/// let err = SpawnError::no_runtime("tokio", "use `try_spawn_native` inside a runtime");
/// assert_eq!(
///     err.to_string(),
///     "no tokio runtime is running on this thread (use `try_spawn_native` inside a runtime)"
/// );
/// ```
#[non_exhaustive]
#[derive(Debug)]
pub enum SpawnError {
    /// The operating system refused to start a thread.
    Thread(io::Error),
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
            SpawnError::Thread(err) => {
                write!(f, "the operating system refused to start a thread: {err}")
            }
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
            SpawnError::Other(err) => write!(f, "the spawner failed: {err}"),
        }
    }
}

impl std::error::Error for SpawnError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SpawnError::Thread(err) => Some(err),
            SpawnError::Other(err) => Some(&**err),
            _ => None,
        }
    }
}
