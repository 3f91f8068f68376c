//! Why a token was cancelled, and the error that carries it.

use std::fmt;
use std::sync::Arc;

/// Why a [`CancelToken`](crate::CancelToken) was cancelled.
///
/// The first cancel's reason is the one every observer sees, and it flows down to child tokens
/// unchanged, so native code can tell a timeout from a disconnected client from a shutdown.
///
/// ```
/// use tethered::{CancelReason, CancelSource};
///
/// let source = CancelSource::new();
/// source.cancel(CancelReason::Timeout);
/// source.cancel(CancelReason::custom("too late")); // changes nothing
/// assert_eq!(source.token().reason(), Some(CancelReason::Timeout));
/// assert_eq!(CancelReason::custom("quota").to_string(), "quota");
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum CancelReason {
    /// Somebody asked for it, e.g. through [`AbortableNative::cancel_and_join`](crate::AbortableNative::cancel_and_join).
    Requested,
    /// The future awaiting the work was dropped: a lost `select!`, an aborted task, a
    /// disconnected client.
    Dropped,
    /// A deadline passed.
    Timeout,
    /// The runtime, pool or scope the work belongs to is shutting down.
    Shutdown,
    /// An application-specific reason.
    Custom(Arc<str>),
}

impl CancelReason {
    /// A [`CancelReason::Custom`] with the given text.
    ///
    /// ```
    /// use tethered::CancelReason;
    /// let reason = CancelReason::custom(format!("client {} went away", 42));
    /// assert_eq!(reason.to_string(), "client 42 went away");
    /// ```
    pub fn custom(reason: impl Into<Arc<str>>) -> Self {
        CancelReason::Custom(reason.into())
    }
}

impl fmt::Display for CancelReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CancelReason::Requested => f.write_str("cancellation was requested"),
            CancelReason::Dropped => f.write_str("the awaiting future was dropped"),
            CancelReason::Timeout => f.write_str("the deadline passed"),
            CancelReason::Shutdown => f.write_str("the runtime or pool is shutting down"),
            CancelReason::Custom(text) => f.write_str(text),
        }
    }
}

/// The error returned by [`CancelToken::check`](crate::CancelToken::check): the token was
/// cancelled, for [`reason`](Cancelled::reason).
///
/// ```
/// use tethered::{CancelReason, CancelSource, Cancelled, CancelToken};
///
/// fn work(token: &CancelToken) -> Result<u32, Cancelled> {
///     token.check()?;
///     Ok(1)
/// }
///
/// let source = CancelSource::new();
/// assert_eq!(work(&source.token()).unwrap(), 1);
/// source.cancel(CancelReason::Shutdown);
/// let err = work(&source.token()).unwrap_err();
/// assert_eq!(err.reason(), &CancelReason::Shutdown);
/// assert_eq!(err.to_string(), "cancelled: the runtime or pool is shutting down");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cancelled {
    reason: CancelReason,
}

impl Cancelled {
    /// An error for a cancel with `reason`.
    pub fn new(reason: CancelReason) -> Self {
        Cancelled { reason }
    }

    /// Why the token was cancelled.
    pub fn reason(&self) -> &CancelReason {
        &self.reason
    }

    /// The reason, by value.
    pub fn into_reason(self) -> CancelReason {
        self.reason
    }
}

impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cancelled: {}", self.reason)
    }
}

impl std::error::Error for Cancelled {}

impl From<Cancelled> for CancelReason {
    fn from(cancelled: Cancelled) -> Self {
        cancelled.reason
    }
}
