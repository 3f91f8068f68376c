//! [`CallbackGuard`]: keeps an `on_cancel` callback registered.

use std::fmt;

use crate::state::{Key, TokenRef};

/// Keeps a callback registered with [`CancelToken::on_cancel`](crate::CancelToken::on_cancel);
/// dropping it deregisters the callback.
///
/// If the callback is running on another thread when the guard is dropped, the drop waits until
/// the callback has returned, so the callback may use state that the guard's owner frees right
/// after the drop. Dropped inside its own callback, the guard returns at once.
///
/// Because of that wait, do not drop a guard while holding a lock its callback takes: if the
/// callback is running at that moment, it waits for the lock and the drop waits for it. Use
/// [`detach`](Self::detach) where the callback can safely outlive its owner.
///
/// ```
/// use std::sync::{Arc, atomic::{AtomicUsize, Ordering}};
/// use tethered::{CancelReason, CancelSource};
///
/// let source = CancelSource::new();
/// let calls = Arc::new(AtomicUsize::new(0));
/// let counter = calls.clone();
/// let guard = source.token().on_cancel(move |_| {
///     counter.fetch_add(1, Ordering::SeqCst);
/// });
/// drop(guard); // deregistered: the callback never runs
/// source.cancel(CancelReason::Requested);
/// assert_eq!(calls.load(Ordering::SeqCst), 0);
/// ```
#[must_use = "dropping the guard deregisters the callback at once; use `detach` to keep it"]
pub struct CallbackGuard {
    registration: Option<(TokenRef, Key)>,
}

impl CallbackGuard {
    pub(crate) fn registered(state: TokenRef, key: Key) -> Self {
        CallbackGuard {
            registration: Some((state, key)),
        }
    }

    /// A guard for a callback that has already run (the token was cancelled at registration).
    pub(crate) fn inert() -> Self {
        CallbackGuard { registration: None }
    }

    /// Keeps the callback registered for as long as the token exists, and drops the guard.
    ///
    /// A token exists while a handle of it (its source, a token, a guard) or a child of it is
    /// left. A token whose handles all went but that still has children stays in the tree
    /// because of this callback, so a cancel from its parent still runs it. With neither
    /// handles nor children left, the token is freed and the callback is dropped unrun, even
    /// if its parent is cancelled later: keep a handle of the token for as long as the
    /// callback should be able to run.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use tethered::{CancelReason, CancelSource};
    ///
    /// let source = CancelSource::new();
    /// let (tx, rx) = mpsc::channel();
    /// source.token().on_cancel(move |reason| tx.send(reason.clone()).unwrap()).detach();
    /// source.cancel(CancelReason::Timeout);
    /// assert_eq!(rx.recv().unwrap(), CancelReason::Timeout);
    /// ```
    pub fn detach(mut self) {
        self.registration = None;
    }

    /// Whether the callback is still registered and has not started running.
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource};
    /// let source = CancelSource::new();
    /// let guard = source.token().on_cancel(|_| {});
    /// assert!(guard.is_pending());
    /// source.cancel(CancelReason::Requested);
    /// assert!(!guard.is_pending());
    /// ```
    pub fn is_pending(&self) -> bool {
        match &self.registration {
            Some((state, key)) => state.is_callback_pending(*key),
            None => false,
        }
    }
}

impl Drop for CallbackGuard {
    fn drop(&mut self) {
        if let Some((state, key)) = self.registration.take() {
            state.deregister_callback(key);
        }
    }
}

impl fmt::Debug for CallbackGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallbackGuard")
            .field("pending", &self.is_pending())
            .finish()
    }
}
