//! [`CancelSource`], the owner side, and [`CancelGuard`], which cancels when dropped.

use std::fmt;

use std::time::{Duration, Instant};

use super::CancelToken;
use crate::reason::{CancelReason, Cause};
use crate::state::{Cancel, TokenRef, TokenState};

/// The owner side of a cancellation: hands out [`CancelToken`]s and cancels them.
///
/// Clones share the same state: cancelling through any clone cancels every token.
///
/// ```
/// use tethered::{CancelReason, CancelSource};
///
/// let source = CancelSource::new();
/// let token = source.token();
/// assert!(source.cancel(CancelReason::Requested)); // this call cancelled
/// assert!(!source.cancel(CancelReason::Timeout)); // already cancelled: no change
/// assert_eq!(token.reason(), Some(CancelReason::Requested));
/// ```
#[derive(Clone)]
pub struct CancelSource {
    pub(crate) state: TokenRef,
}

impl CancelSource {
    /// A new source, not cancelled.
    pub fn new() -> Self {
        CancelSource {
            state: TokenState::root(),
        }
    }

    /// A token observing this source.
    pub fn token(&self) -> CancelToken {
        CancelToken {
            state: self.state.clone(),
        }
    }

    /// Cancels every token of this source (and every descendant) with `reason`.
    ///
    /// Returns `true` exactly when this call decided the reason: the token now reads
    /// `reason`, because of this call. It returns `false` when nothing changed (the source was
    /// cancelled already, or can no longer be: a finished job's token), and also when an
    /// ancestor (a parent, or any parent of an [`any_of`](Self::any_of) source) was cancelled
    /// first and its cancel had not reached this source yet: the first cause wins, so the
    /// source is cancelled at once but with the ancestor's reason and cause, and the return
    /// value agrees with what [`CancelToken::reason`] reads.
    ///
    /// The call that cancels sets the flag of this source's tokens and of every descendant
    /// first, then wakes every waiter and runs the registered callbacks on this thread (see
    /// [`CancelToken::on_cancel`]): this source's first, then its descendants', in tree order.
    ///
    /// Every call returns only once every descendant reads cancelled, a call that returns
    /// `false` included: when another thread is cancelling this source, or a token between it
    /// and a descendant, at the same moment, this call waits until that cancel has set the
    /// flags below it (no callback runs before that, so the wait is short).
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource};
    ///
    /// let request = CancelSource::new();
    /// let step = request.child();
    /// assert!(request.cancel(CancelReason::Timeout)); // decided the reason
    /// assert!(!step.cancel(CancelReason::Requested)); // the parent's came first
    /// assert_eq!(step.token().reason(), Some(CancelReason::Timeout));
    /// ```
    pub fn cancel(&self, reason: CancelReason) -> bool {
        self.state.cancel(reason, None) == Cancel::Won
    }

    /// Cancels as [`cancel`](Self::cancel) does, with `cause` as the detail every token and
    /// descendant reads ([`CancelToken::cause`]), as Go's `WithCancelCause` does: an error of
    /// your own that native code can downcast, or a message ([`Cause::msg`]).
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource, Cause};
    ///
    /// let source = CancelSource::new();
    /// let child = source.child();
    /// source.cancel_with_cause(CancelReason::Requested, Cause::msg("the user pressed stop"));
    /// let cause = child.token().cause().unwrap();
    /// assert_eq!(cause.to_string(), "the user pressed stop");
    /// let err = child.token().check().unwrap_err();
    /// assert_eq!(err.to_string(), "cancelled: cancellation was requested");
    /// assert_eq!(std::error::Error::source(&err).unwrap().to_string(), "the user pressed stop");
    /// ```
    pub fn cancel_with_cause(&self, reason: CancelReason, cause: impl Into<Cause>) -> bool {
        self.state.cancel(reason, Some(cause.into())) == Cancel::Won
    }

    /// A source cancelled by whichever of `parents` is cancelled first (with that parent's
    /// reason and cause), or by its own cancel, as .NET's `CreateLinkedTokenSource` and
    /// JavaScript's `AbortSignal.any` are. Its deadline ([`CancelToken::deadline`]) is the
    /// earliest of its parents'. Cancelling it never touches a parent.
    ///
    /// It is linked to each parent by one registration, released as soon as it is cancelled,
    /// can no longer be (a finished job's token), or is gone: a long-lived parent does not
    /// collect registrations of sources that went. With no parents it is a plain
    /// [`CancelSource::new`]; with one, a [`CancelToken::child`]. If a parent is cancelled
    /// already, the new source starts cancelled with its reason.
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource};
    ///
    /// let request = CancelSource::new();
    /// let server = CancelSource::new();
    /// let work = CancelSource::any_of([&request.token(), &server.token()]);
    /// assert_eq!(request.token().registrations(), 1);
    /// server.cancel(CancelReason::Shutdown);
    /// assert_eq!(work.token().reason(), Some(CancelReason::Shutdown));
    /// assert_eq!(request.token().registrations(), 0); // released once cancelled
    /// ```
    pub fn any_of<'a>(parents: impl IntoIterator<Item = &'a CancelToken>) -> CancelSource {
        let mut parents = parents.into_iter();
        let Some(first) = parents.next() else {
            return CancelSource::new();
        };
        let source = first.child();
        for parent in parents {
            source.state.link_to(&parent.state);
        }
        source
    }

    /// A new source linked to this one: shorthand for
    /// [`self.token().child()`](CancelToken::child).
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource};
    /// let request = CancelSource::new();
    /// let step = request.child();
    /// request.cancel(CancelReason::Timeout);
    /// assert_eq!(step.token().reason(), Some(CancelReason::Timeout));
    /// ```
    pub fn child(&self) -> CancelSource {
        // Straight from this source's own handle: a token made and dropped on the way would
        // cost four reference-count updates per child.
        CancelSource {
            state: TokenState::child_of(&self.state),
        }
    }

    /// Whether this source has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.state.is_cancelled()
    }

    /// Cancels this source with [`CancelReason::Timeout`] at `deadline`, unless it is
    /// cancelled (or dropped) first: a deadline for everything tied to it, on the crate's timer
    /// thread, with no runtime needed. The deadline keeps neither the source nor anything else
    /// alive: it still fires for the tokens and children of a source whose own handle is gone,
    /// and it leaves the timer as soon as the source is cancelled or freed (no source, token or
    /// child of it left). A deadline that has passed cancels at once; the earliest of several
    /// deadlines is the one [`CancelToken::deadline`] reads.
    ///
    /// # Errors
    ///
    /// Only if the timer thread is not running yet and the OS refuses to start it; nothing is
    /// scheduled then, and a later call tries again.
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use tethered::{CancelReason, CancelSource};
    ///
    /// let request = CancelSource::new();
    /// let at = Instant::now() + Duration::from_millis(10);
    /// request.cancel_at(at)?;
    /// assert_eq!(request.token().deadline(), Some(at));
    /// assert_eq!(request.token().wait(), CancelReason::Timeout);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cancel_at(&self, deadline: Instant) -> std::io::Result<()> {
        let state = self.state.downgrade();
        self.token().on_deadline(deadline, move || {
            if let Some(state) = state.upgrade() {
                state.cancel(CancelReason::Timeout, None);
            }
        })
    }

    /// [`cancel_at`](Self::cancel_at) `delay` from now. A `delay` too long for an `Instant`
    /// (`Duration::MAX`) never fires.
    ///
    /// # Errors
    ///
    /// As [`cancel_at`](Self::cancel_at).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tethered::{CancelReason, CancelSource};
    ///
    /// let request = CancelSource::new();
    /// request.cancel_after(Duration::from_millis(10))?;
    /// assert_eq!(request.token().wait(), CancelReason::Timeout);
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cancel_after(&self, delay: Duration) -> std::io::Result<()> {
        match Instant::now().checked_add(delay) {
            Some(deadline) => self.cancel_at(deadline),
            None => Ok(()),
        }
    }

    /// Turns the source into a guard that cancels it with [`CancelReason::Dropped`] when dropped,
    /// unless [`CancelGuard::disarm`] was called.
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource};
    ///
    /// let source = CancelSource::new();
    /// let token = source.token();
    /// {
    ///     let _guard = source.drop_guard();
    /// }
    /// assert_eq!(token.reason(), Some(CancelReason::Dropped));
    /// ```
    #[must_use = "dropping the guard cancels the source at once"]
    pub fn drop_guard(self) -> CancelGuard {
        CancelGuard { source: Some(self) }
    }
}

impl Default for CancelSource {
    fn default() -> Self {
        CancelSource::new()
    }
}

/// Two sources are equal when they are clones of one another: when their tokens are
/// [`same_as`](CancelToken::same_as) each other. A source also equals its own tokens, and
/// hashes as they do.
///
/// ```
/// use std::collections::HashMap;
/// use tethered::CancelSource;
///
/// let request = CancelSource::new();
/// assert_eq!(request, request.clone());
/// assert_ne!(request, CancelSource::new());
/// assert!(request == request.token());
/// let mut work = HashMap::new();
/// work.insert(request.token(), "render");
/// assert_eq!(work.get(&request.token()), Some(&"render"));
/// ```
impl PartialEq for CancelSource {
    fn eq(&self, other: &CancelSource) -> bool {
        self.state.ptr_eq(&other.state)
    }
}

impl Eq for CancelSource {}

impl PartialEq<CancelToken> for CancelSource {
    fn eq(&self, other: &CancelToken) -> bool {
        self.state.ptr_eq(&other.state)
    }
}

impl PartialEq<CancelSource> for CancelToken {
    fn eq(&self, other: &CancelSource) -> bool {
        self.state.ptr_eq(&other.state)
    }
}

impl std::hash::Hash for CancelSource {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        std::ptr::hash(self.state.addr(), state);
    }
}

impl fmt::Debug for CancelSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelSource")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

/// Cancels its [`CancelSource`] with [`CancelReason::Dropped`] when dropped, unless disarmed.
/// Made by [`CancelSource::drop_guard`].
///
/// ```
/// use tethered::CancelSource;
///
/// let source = CancelSource::new();
/// let token = source.token();
/// let guard = source.drop_guard();
/// let source = guard.disarm(); // the work finished: nothing to cancel
/// drop(source);
/// assert!(!token.is_cancelled());
/// ```
#[must_use = "dropping the guard cancels the source at once"]
pub struct CancelGuard {
    source: Option<CancelSource>,
}

impl CancelGuard {
    /// Gives the source back without cancelling it.
    #[expect(
        clippy::missing_panics_doc,
        reason = "a guard holds its source until disarmed or dropped: the expect never fires"
    )]
    pub fn disarm(mut self) -> CancelSource {
        self.source
            .take()
            .expect("a CancelGuard holds its source until disarmed or dropped")
    }

    /// A token observing the guarded source.
    pub fn token(&self) -> CancelToken {
        self.source().token()
    }

    /// The guarded source.
    #[expect(
        clippy::missing_panics_doc,
        reason = "a guard holds its source until disarmed or dropped: the expect never fires"
    )]
    pub fn source(&self) -> &CancelSource {
        self.source
            .as_ref()
            .expect("a CancelGuard holds its source until disarmed or dropped")
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if let Some(source) = self.source.take() {
            // What a guard stands for is a call's own source (a `CancelOnDrop`'s), most often
            // bare, whose token native code may be polling right now.
            source
                .state
                .arc()
                .cancel_likely_bare(CancelReason::Dropped, None);
        }
    }
}

impl fmt::Debug for CancelGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelGuard")
            .field("source", &self.source)
            .finish()
    }
}
