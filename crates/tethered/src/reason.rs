//! Why a token was cancelled ([`CancelReason`]), what caused it in detail ([`Cause`]), and the
//! error that carries both ([`Cancelled`]).

use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// Why a [`CancelToken`](crate::CancelToken) was cancelled: one of five events, read the same
/// way from every language and every crate of the family.
///
/// The first cancel's reason is the one every observer sees, and it flows down to child tokens
/// unchanged, so native code can tell a timeout from a caller that gave up from a shutdown. A
/// reason is `Copy` and compares in one instruction; the detail (an error value, a JavaScript
/// `signal.reason`, an asyncio `CancelledError`'s message) travels beside it as the token's
/// [`Cause`] ([`CancelToken::cause`](crate::CancelToken::cause)).
///
/// | Variant | Rust | asyncio, trio (`tethered-pyo3`) | `AbortSignal` (`tethered-napi`) | tokio-util link | request layer (`tethered-tower`) |
/// | --- | --- | --- | --- | --- | --- |
/// | [`Dropped`](Self::Dropped): the caller gave up | the handle dropped (a lost `select!`, an aborted task) | the awaiting task cancelled (`task.cancel(msg)`: the message is the cause) | `controller.abort(reason)` (the reason is the cause) | the `CancellationToken` cancelled | the client disconnected, the stream was reset |
/// | [`Timeout`](Self::Timeout): a deadline passed | `cancel_after`, `cancel_at`, a `timeout` | `asyncio.timeout`, `wait_for`, `trio.fail_after`, anyio's deadlines | `AbortSignal.timeout(ms)` | (a deadline set on the tethered side) | `grpc-timeout`, the layer's timeout |
/// | [`Shutdown`](Self::Shutdown): the owner is going away | a scope's or a server's shutdown, a pool dropping queued work | the loop closed, the interpreter exiting | a `Worker` terminated, `process.exit()` | | the server shutting down |
/// | [`Requested`](Self::Requested): stopped on purpose, still awaited | `cancel_and_join`, an [`AbortHandle`](crate::AbortHandle) | | | | |
/// | [`Failed`](Self::Failed): something it depends on failed | a sibling in a [`JobGroup`](crate::JobGroup) (the cause names it), a worker pool that gave up | | | | |
///
/// ```
/// use tethered::{CancelReason, CancelSource};
///
/// let source = CancelSource::new();
/// source.cancel(CancelReason::Timeout);
/// source.cancel(CancelReason::Requested); // changes nothing: the first reason stays
/// assert_eq!(source.token().reason(), Some(CancelReason::Timeout));
/// assert_eq!(CancelReason::Timeout.to_string(), "the deadline passed");
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CancelReason {
    /// Somebody stopped the work on purpose and still waits for what it returns:
    /// [`cancel_and_join`](crate::Tethered::cancel_and_join), an
    /// [`AbortHandle`](crate::AbortHandle), a `cancel` with this reason.
    Requested,
    /// The caller gave up: the future awaiting the work was dropped (a lost `select!`, an
    /// aborted task, a disconnected client), the asyncio or trio task awaiting it was
    /// cancelled, its `AbortSignal` aborted, its linked `CancellationToken` cancelled.
    Dropped,
    /// A deadline passed.
    Timeout,
    /// The runtime, pool, scope, server, event loop or process the work belongs to is shutting
    /// down.
    Shutdown,
    /// Something the work depends on failed: a sibling in a fail-fast
    /// [`JobGroup`](crate::JobGroup), a worker pool that gave up. The token's [`Cause`] says
    /// what failed.
    Failed,
}

impl CancelReason {
    /// Every reason, in declaration order.
    ///
    /// ```
    /// assert_eq!(tethered::CancelReason::ALL.len(), 5);
    /// ```
    pub const ALL: [CancelReason; 5] = [
        CancelReason::Requested,
        CancelReason::Dropped,
        CancelReason::Timeout,
        CancelReason::Shutdown,
        CancelReason::Failed,
    ];

    /// The reason's name in lower case, as a metric's label or a Python or JavaScript key
    /// carries it: `"requested"`, `"dropped"`, `"timeout"`, `"shutdown"`, `"failed"`.
    ///
    /// ```
    /// assert_eq!(tethered::CancelReason::Timeout.as_str(), "timeout");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            CancelReason::Requested => "requested",
            CancelReason::Dropped => "dropped",
            CancelReason::Timeout => "timeout",
            CancelReason::Shutdown => "shutdown",
            CancelReason::Failed => "failed",
        }
    }
}

impl fmt::Display for CancelReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CancelReason::Requested => "cancellation was requested",
            CancelReason::Dropped => "the caller gave up",
            CancelReason::Timeout => "the deadline passed",
            CancelReason::Shutdown => "its owner is shutting down",
            CancelReason::Failed => "something it depends on failed",
        })
    }
}

/// The detail of a cancel: an error value that travels with its [`CancelReason`], as Go's
/// `context.Cause` does. Native code that wants to know more than the reason reads it from
/// [`CancelToken::cause`](crate::CancelToken::cause) and downcasts it to its own error type.
///
/// Cheap to clone (one reference count) and `Send + Sync`. It holds any
/// `Error + Send + Sync + 'static`, or a message ([`Cause::msg`]).
///
/// ```
/// use tethered::{CancelReason, CancelSource, Cause};
///
/// #[derive(Debug)]
/// struct QuotaExceeded { used: u64 }
/// impl std::fmt::Display for QuotaExceeded {
///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
///         write!(f, "quota exceeded after {} steps", self.used)
///     }
/// }
/// impl std::error::Error for QuotaExceeded {}
///
/// let source = CancelSource::new();
/// source.cancel_with_cause(CancelReason::Requested, QuotaExceeded { used: 9 });
/// let token = source.token();
/// let cause = token.cause().expect("cancelled with a cause");
/// assert_eq!(cause.downcast_ref::<QuotaExceeded>().map(|q| q.used), Some(9));
/// assert_eq!(cause.to_string(), "quota exceeded after 9 steps");
/// assert_eq!(Cause::msg("config reloaded").to_string(), "config reloaded");
/// ```
#[derive(Clone)]
pub struct Cause(Arc<dyn Error + Send + Sync + 'static>);

// A cause is an immutable shared error: nothing here changes it, so no panic can leave it
// half-changed, and a caller may hold one across `catch_unwind` (as `anyhow::Error` may).
impl std::panic::UnwindSafe for Cause {}
impl std::panic::RefUnwindSafe for Cause {}

impl Cause {
    /// A cause holding `error`.
    pub fn new<E: Error + Send + Sync + 'static>(error: E) -> Self {
        Cause(Arc::new(error))
    }

    /// A cause that is only a message.
    ///
    /// ```
    /// let cause = tethered::Cause::msg(format!("client {} went away", 42));
    /// assert_eq!(cause.to_string(), "client 42 went away");
    /// ```
    pub fn msg(message: impl Into<String>) -> Self {
        Cause(Arc::new(Message(message.into())))
    }

    /// A cause sharing an error already behind an `Arc`.
    pub(crate) fn from_arc<E: Error + Send + Sync + 'static>(error: Arc<E>) -> Self {
        Cause(error)
    }

    /// A cause holding an already boxed error.
    pub fn from_boxed(error: Box<dyn Error + Send + Sync + 'static>) -> Self {
        Cause(Arc::from(error))
    }

    /// The error as an `E`: the cause itself if it is one, or else the first error of its
    /// [`source`](Error::source) chain that is (a [`JobGroup`](crate::JobGroup) sibling's cause
    /// is a [`GroupFailure`](crate::GroupFailure) whose source is the error the failing job
    /// returned: both are found here).
    ///
    /// ```
    /// use tethered::Cause;
    ///
    /// #[derive(Debug)]
    /// struct Wrapped(std::io::Error);
    /// impl std::fmt::Display for Wrapped {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    ///         write!(f, "the upload failed")
    ///     }
    /// }
    /// impl std::error::Error for Wrapped {
    ///     fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
    ///         Some(&self.0)
    ///     }
    /// }
    ///
    /// let cause = Cause::new(Wrapped(std::io::Error::other("disk full")));
    /// assert!(cause.downcast_ref::<Wrapped>().is_some());
    /// assert_eq!(cause.downcast_ref::<std::io::Error>().unwrap().to_string(), "disk full");
    /// assert!(cause.downcast_ref::<std::fmt::Error>().is_none());
    /// ```
    pub fn downcast_ref<E: Error + 'static>(&self) -> Option<&E> {
        let mut next: Option<&(dyn Error + 'static)> = Some(self.as_error());
        // At most this many links: an error whose source chain loops ends the search.
        let mut links = MAX_CHAIN;
        while let Some(error) = next.filter(|_| links > 0) {
            links -= 1;
            if let Some(found) = error.downcast_ref::<E>() {
                return Some(found);
            }
            next = error.source();
        }
        None
    }

    /// Whether the error, or an error of its source chain, is an `E` (see
    /// [`downcast_ref`](Self::downcast_ref)).
    pub fn is<E: Error + 'static>(&self) -> bool {
        self.downcast_ref::<E>().is_some()
    }

    /// The error, as a trait object (for an error chain: `source()` of a [`Cancelled`]).
    pub fn as_error(&self) -> &(dyn Error + Send + Sync + 'static) {
        &*self.0
    }

    /// Whether both causes are the same value (not merely equal text).
    pub fn ptr_eq(&self, other: &Cause) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl<E: Error + Send + Sync + 'static> From<E> for Cause {
    fn from(error: E) -> Self {
        Cause::new(error)
    }
}

impl AsRef<dyn Error + Send + Sync + 'static> for Cause {
    fn as_ref(&self) -> &(dyn Error + Send + Sync + 'static) {
        self.as_error()
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&*self.0, f)
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

/// How many errors of a source chain a search looks at: a chain that loops (an error whose
/// `source` is itself) must not hang the caller.
pub(crate) const MAX_CHAIN: usize = 256;

/// The error behind [`Cause::msg`].
#[derive(Debug)]
struct Message(String);

impl fmt::Display for Message {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Error for Message {}

/// The error returned by [`CancelToken::check`](crate::CancelToken::check): the token was
/// cancelled, for [`reason`](Cancelled::reason), and with its [`cause`](Cancelled::cause) if
/// the cancel gave one (the error's [`source`](Error::source)).
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
/// assert_eq!(err.reason(), CancelReason::Shutdown);
/// assert_eq!(err.to_string(), "cancelled: its owner is shutting down");
/// ```
#[derive(Clone, Debug)]
pub struct Cancelled {
    reason: CancelReason,
    cause: Option<Cause>,
}

impl Cancelled {
    /// An error for a cancel with `reason` and no cause.
    pub fn new(reason: CancelReason) -> Self {
        Cancelled {
            reason,
            cause: None,
        }
    }

    /// An error for a cancel with `reason` and `cause`.
    pub fn with_cause(reason: CancelReason, cause: Option<Cause>) -> Self {
        Cancelled { reason, cause }
    }

    /// Why the token was cancelled.
    pub fn reason(&self) -> CancelReason {
        self.reason
    }

    /// What the cancel gave as its cause, if anything.
    pub fn cause(&self) -> Option<&Cause> {
        self.cause.as_ref()
    }

    /// The cause, by value.
    pub fn into_cause(self) -> Option<Cause> {
        self.cause
    }
}

/// Two errors are equal when their reasons are and their causes are the same value (or both
/// absent).
impl PartialEq for Cancelled {
    fn eq(&self, other: &Self) -> bool {
        self.reason == other.reason
            && match (&self.cause, &other.cause) {
                (None, None) => true,
                (Some(a), Some(b)) => a.ptr_eq(b),
                _ => false,
            }
    }
}

/// Says the reason; the cause is the error's [`source`](Error::source), not repeated here.
impl fmt::Display for Cancelled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cancelled: {}", self.reason)
    }
}

impl Error for Cancelled {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.cause.as_ref().map(|cause| cause.as_error() as _)
    }
}

impl From<Cancelled> for CancelReason {
    fn from(cancelled: Cancelled) -> Self {
        cancelled.reason
    }
}

/// `err`'s message followed by each of its sources', joined with ": ": the whole story in one
/// line, for a panic message or a log line (an error's own `Display` never repeats its
/// source).
///
/// ```
/// let err = tethered::SpawnError::other("no capacity left");
/// assert_eq!(err.to_string(), "the spawner failed");
/// assert_eq!(tethered::__private::error_chain(&err), "the spawner failed: no capacity left");
/// ```
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut next = err.source();
    // A chain that loops (an error whose `source` is itself) is cut short.
    let mut links = MAX_CHAIN;
    while let Some(source) = next.filter(|_| links > 0) {
        links -= 1;
        text.push_str(": ");
        text.push_str(&source.to_string());
        next = source.source();
    }
    text
}
