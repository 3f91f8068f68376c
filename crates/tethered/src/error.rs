//! [`NativeError`]: why a job produced no plain result, read the same whoever stopped it.

use std::any::Any;
use std::fmt;
use std::time::Duration;

use crate::panic::JobPanic;
use crate::reason::{CancelReason, Cause};

/// Why a tethered job produced no plain result: it was stopped, it panicked, or its caller
/// stopped waiting. `T` is the job's output type, so a stopped job can hand back what its
/// closure returned.
///
/// Every handle to tethered work resolves to `Result<T, NativeError<T>>`, and reads the same
/// way whoever stopped it (a drop, a timeout, a deadline, a parent token, a scope, a shutdown,
/// an explicit cancel):
///
/// | What happened | The closure | The handle gives |
/// | --- | --- | --- |
/// | The job finished and no cancel came before its closure returned | returned `v` | `Ok(v)` |
/// | A cancel came while the closure ran | returned `v` (a partial result, or all of it) | `Err(Cancelled { reason, returned: Some(v), .. })` |
/// | A cancel came before the closure started | never runs | `Err(Cancelled { reason, returned: None, .. })` |
/// | The pool dropped the job unrun (it shut down) | never runs | `Err(Cancelled { reason: Shutdown, returned: None, .. })` |
/// | A cancel came after the closure returned | returned `v` | `Ok(v)`; the cancel returns `false` |
/// | The closure panicked | panicked | `Err(Panicked(..))` |
/// | A [`timeout`](crate::Tethered::timeout) or [`cancel_when`](crate::Tethered::cancel_when) fired while the closure ran | still running | `Err(Abandoned { reason, grace: 0, .. })` at once (or the `Cancelled` row, if the closure returned before the timeout looked again) |
/// | A [`grace`](crate::JobOptions::grace) passed after a cancel | still running | `Err(Abandoned { reason, grace, .. })` |
///
/// Whatever stops a job first names the reason: a deadline that fired before the job's handle
/// was dropped reads `Timeout`, however the threads interleave (see
/// [`CancelSource::cancel`](crate::CancelSource::cancel)). The cancel's [`Cause`], if it gave
/// one, is the error's [`source`](std::error::Error::source) and [`cause`](Self::cause).
///
/// So `Ok` always means "finished, not stopped"; `Cancelled` means "stopped, and the native
/// code is done with the job"; `Abandoned` means "told to stop, and the caller stopped waiting
/// while it still ran" (it is counted in [`stats()`](crate::stats)`.running` until it returns).
/// The one decision between "finished" and "stopped" is the job's token: the closure's return
/// seals it, and whichever of the seal and the cancel comes first wins.
///
/// ```
/// use tethered::{AbortableNative, CancelReason, NativeError, Tethered};
///
/// let (started_tx, started) = std::sync::mpsc::channel();
/// let job = AbortableNative::spawn(move |token| {
///     started_tx.send(()).unwrap();
///     let mut steps = 0u64;
///     while !token.is_cancelled() {
///         steps += 1;
///     }
///     steps // a partial result
/// });
/// started.recv().unwrap();
/// job.cancel(CancelReason::Timeout);
/// match job.join_blocking() {
///     Err(NativeError::Cancelled { reason, returned, .. }) => {
///         assert_eq!(reason, CancelReason::Timeout);
///         assert!(returned.is_some()); // what the closure returned once it saw the cancel
///     }
///     other => panic!("{other:?}"),
/// }
/// ```
///
/// What the closure returned travels boxed, so the error stays small (a few words) whatever
/// `T` is, and `Result<T, NativeError<T>>` is no larger than it needs to be.
///
/// `NativeError<T>` is a [`std::error::Error`] whatever `T` is (its `Debug` shows whether a
/// value came back, not the value), so `?` turns it into a `Box<dyn Error + Send + Sync>` or
/// an `anyhow::Error` when `T` is `Send + Sync + 'static`; [`without_returned`](Self::without_returned)
/// drops the value for the other cases.
#[non_exhaustive]
pub enum NativeError<T> {
    /// The job was stopped by a cancel before it could finish, and its native code is done
    /// with it: either the closure never ran (`returned` is `None`: the cancel came before it
    /// started, or the pool dropped it unrun with [`CancelReason::Shutdown`]), or it ran, saw
    /// the cancel (or not) and returned `returned`.
    #[non_exhaustive]
    Cancelled {
        /// Why the job was cancelled.
        reason: CancelReason,
        /// The cancel's cause, if it gave one.
        cause: Option<Cause>,
        /// What the closure returned after the cancel, if it ran; boxed, so that the error stays
        /// small whatever `T` is (take it out with [`NativeError::into_returned`]).
        returned: Option<Box<T>>,
    },
    /// The closure panicked; the panic was caught on the native thread.
    Panicked(JobPanic),
    /// The job was cancelled and the caller stopped waiting while its closure still ran: at
    /// once, when a [`timeout`](crate::Tethered::timeout) or
    /// [`cancel_when`](crate::Tethered::cancel_when) fired (`grace` is zero), or `grace` after
    /// the cancel for a job with a [`grace`](crate::JobOptions::grace). The closure runs on
    /// until it notices, counted in [`stats()`](crate::stats)`.running`.
    #[non_exhaustive]
    Abandoned {
        /// Why the job was cancelled.
        reason: CancelReason,
        /// The cancel's cause, if it gave one.
        cause: Option<Cause>,
        /// How long the caller waited after the cancel.
        grace: Duration,
    },
}

impl<T> NativeError<T> {
    /// A job stopped before its closure ran (or whose closure returned nothing to keep).
    pub(crate) fn cancelled(reason: CancelReason, cause: Option<Cause>) -> Self {
        NativeError::Cancelled {
            reason,
            cause,
            returned: None,
        }
    }

    /// What a caller that stops waiting at a cancel gives while the closure still runs (a
    /// [`timeout`](crate::Tethered::timeout), a [`cancel_when`](crate::Tethered::cancel_when)).
    pub(crate) fn abandoned_now(reason: CancelReason, cause: Option<Cause>) -> Self {
        NativeError::Abandoned {
            reason,
            cause,
            grace: Duration::ZERO,
        }
    }

    /// Whether the job was stopped by a cancel and its native code is done with it.
    pub fn is_cancelled(&self) -> bool {
        matches!(self, NativeError::Cancelled { .. })
    }

    /// Whether the closure panicked.
    pub fn is_panic(&self) -> bool {
        matches!(self, NativeError::Panicked(_))
    }

    /// Whether the caller stopped waiting for a cancelled job that kept running.
    pub fn is_abandoned(&self) -> bool {
        matches!(self, NativeError::Abandoned { .. })
    }

    /// Why the job was stopped: the cancel's reason, if this is [`NativeError::Cancelled`] or
    /// [`NativeError::Abandoned`].
    pub fn cancel_reason(&self) -> Option<CancelReason> {
        match self {
            NativeError::Cancelled { reason, .. } | NativeError::Abandoned { reason, .. } => {
                Some(*reason)
            }
            NativeError::Panicked(_) => None,
        }
    }

    /// The cancel's cause, if the job was stopped by a cancel that gave one.
    pub fn cause(&self) -> Option<&Cause> {
        match self {
            NativeError::Cancelled { cause, .. } | NativeError::Abandoned { cause, .. } => {
                cause.as_ref()
            }
            NativeError::Panicked(_) => None,
        }
    }

    /// What the closure returned after the cancel, if it ran and returned.
    pub fn returned(&self) -> Option<&T> {
        match self {
            NativeError::Cancelled { returned, .. } => returned.as_deref(),
            _ => None,
        }
    }

    /// Takes what the closure returned after the cancel, if it ran and returned.
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason, Tethered};
    ///
    /// let job = AbortableNative::spawn(|token| token.wait());
    /// job.cancel(CancelReason::Requested);
    /// let err = job.join_blocking().unwrap_err();
    /// // `Some` if the closure had started (it returned the reason it saw), `None` if not.
    /// if let Some(seen) = err.into_returned() {
    ///     assert_eq!(seen, CancelReason::Requested);
    /// }
    /// ```
    pub fn into_returned(self) -> Option<T> {
        match self {
            NativeError::Cancelled { returned, .. } => returned.map(|value| *value),
            _ => None,
        }
    }

    /// The same error with what the closure returned dropped: for a `?` into an error type
    /// that needs `T: Sync`, or for a caller that only wants to know why.
    ///
    /// ```
    /// use tethered::{CancelReason, NativeError};
    ///
    /// fn why(err: NativeError<std::cell::Cell<u8>>) -> Box<dyn std::error::Error + Send + Sync> {
    ///     err.without_returned().into() // `Cell` is not `Sync`; `()` is
    /// }
    /// let err = why(NativeError::from(tethered::Cancelled::new(CancelReason::Timeout)));
    /// assert_eq!(err.to_string(), "native job cancelled: the deadline passed");
    /// ```
    pub fn without_returned(self) -> NativeError<()> {
        self.map_returned(drop)
    }

    /// The same error with what the closure returned mapped by `f` (a bridge converting a
    /// partial result to its own type).
    pub fn map_returned<U>(self, f: impl FnOnce(T) -> U) -> NativeError<U> {
        match self {
            NativeError::Cancelled {
                reason,
                cause,
                returned,
            } => NativeError::Cancelled {
                reason,
                cause,
                returned: returned.map(|value| Box::new(f(*value))),
            },
            NativeError::Panicked(panic) => NativeError::Panicked(panic),
            NativeError::Abandoned {
                reason,
                cause,
                grace,
            } => NativeError::Abandoned {
                reason,
                cause,
                grace,
            },
        }
    }

    /// The panic payload, or the error itself if it is not a panic.
    ///
    /// # Errors
    ///
    /// `self`, when it is not [`NativeError::Panicked`].
    pub fn try_into_panic(self) -> Result<Box<dyn Any + Send + 'static>, NativeError<T>> {
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

/// Says what happened, in one sentence; the cancel's cause and the panic are the error's
/// [`source`](std::error::Error::source), not repeated here.
impl<T> fmt::Display for NativeError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NativeError::Cancelled {
                reason, returned, ..
            } => {
                write!(f, "native job cancelled: {reason}")?;
                if returned.is_some() {
                    f.write_str(" (its closure returned a value after the cancel)")?;
                }
                Ok(())
            }
            NativeError::Panicked(_) => f.write_str("native job panicked"),
            NativeError::Abandoned { reason, grace, .. } if grace.is_zero() => write!(
                f,
                "native job abandoned: cancelled ({reason}) and still running when the caller \
                 stopped waiting; it runs on until it notices"
            ),
            NativeError::Abandoned { reason, grace, .. } => write!(
                f,
                "native job abandoned: cancelled ({reason}) and still running {grace:?} later; \
                 it runs on, counted as detached"
            ),
        }
    }
}

/// Shows what happened and whether a value came back, not the value: so `NativeError<T>` is an
/// error for every `T`.
impl<T> fmt::Debug for NativeError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NativeError::Cancelled {
                reason,
                cause,
                returned,
            } => f
                .debug_struct("Cancelled")
                .field("reason", reason)
                .field("cause", cause)
                .field(
                    "returned",
                    &returned.as_ref().map(|_| std::any::type_name::<T>()),
                )
                .finish(),
            NativeError::Panicked(panic) => f.debug_tuple("Panicked").field(panic).finish(),
            NativeError::Abandoned {
                reason,
                cause,
                grace,
            } => f
                .debug_struct("Abandoned")
                .field("reason", reason)
                .field("cause", cause)
                .field("grace", grace)
                .finish(),
        }
    }
}

impl<T> std::error::Error for NativeError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            NativeError::Panicked(panic) => Some(panic),
            _ => self.cause().map(|cause| cause.as_error() as _),
        }
    }
}

/// A [`Cancelled`](crate::Cancelled) from [`CancelToken::check`](crate::CancelToken::check) is a
/// [`NativeError::Cancelled`] with nothing returned, so a closure returning `Result<_, Cancelled>`
/// composes with `?`.
///
/// ```
/// use tethered::{AbortableNative, Cancelled, NativeError};
///
/// fn run() -> Result<u32, Box<dyn std::error::Error + Send + Sync>> {
///     let job = AbortableNative::spawn(|token| -> Result<u32, Cancelled> {
///         token.check()?;
///         Ok(7)
///     });
///     Ok(job.join_blocking()??)
/// }
/// assert_eq!(run().unwrap(), 7);
/// ```
impl<T> From<crate::Cancelled> for NativeError<T> {
    fn from(cancelled: crate::Cancelled) -> Self {
        let reason = cancelled.reason();
        NativeError::cancelled(reason, cancelled.into_cause())
    }
}
