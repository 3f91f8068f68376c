//! [`CancelSource`], the owner side, and [`CancelGuard`], which cancels when dropped.

use std::fmt;

use super::CancelToken;
use crate::reason::CancelReason;
use crate::state::{TokenRef, TokenState};

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

    /// Cancels every token of this source (and every child) with `reason`.
    ///
    /// Returns `true` only for the call that actually cancelled; later calls change nothing and
    /// return `false`. The winning call sets the flag, wakes every waiter, and then runs the
    /// registered callbacks on this thread before returning (see
    /// [`CancelToken::on_cancel`]).
    pub fn cancel(&self, reason: CancelReason) -> bool {
        self.state.cancel(reason)
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
        self.token().child()
    }

    /// Whether this source has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.state.is_cancelled()
    }

    /// Cancels this source with [`CancelReason::Timeout`] once `delay` has passed, unless it is
    /// cancelled (or dropped) first: a deadline for everything tied to it, on the crate's timer
    /// thread, with no runtime needed. A `delay` too long for an `Instant` (`Duration::MAX`)
    /// never fires. The deadline keeps neither the source nor anything else alive: it still
    /// fires for the tokens and children of a source whose own handle is gone, and it leaves
    /// the timer as soon as the source is cancelled or freed (no source, token or child of it
    /// left).
    ///
    /// # Errors
    ///
    /// Only if the timer thread is not running yet and the OS refuses to start it; nothing is
    /// scheduled then, and a later call tries again.
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
    pub fn cancel_after(&self, delay: std::time::Duration) -> std::io::Result<()> {
        let state = self.state.downgrade();
        self.token().on_deadline(delay, move || {
            if let Some(state) = state.upgrade() {
                state.cancel(CancelReason::Timeout);
            }
        })
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
    pub fn source(&self) -> &CancelSource {
        self.source
            .as_ref()
            .expect("a CancelGuard holds its source until disarmed or dropped")
    }
}

impl Drop for CancelGuard {
    fn drop(&mut self) {
        if let Some(source) = self.source.take() {
            source.cancel(CancelReason::Dropped);
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
