//! [`TokenRef`]: a counted handle to a token's state.
//!
//! Every public object that can reach a token (a `CancelSource`, a `CancelToken`, a callback
//! guard, a `WaitCancelled` future) holds its state through a `TokenRef`. The tree's own links
//! (a child's strong `Arc` of its parent) and the crate's internal `Weak`s do not count. When
//! the last `TokenRef` goes, nobody can cancel the token, register on it or make a child of it
//! any more: the token is then spliced out of the tree (see `tree.rs`), so that a long-lived
//! leaf keeps no dead ancestor alive.

use std::ops::Deref;

use super::{Cancel, TokenState};
use crate::reason::{CancelReason, Cause};
use crate::sync::{Arc, Ordering, Weak, fence};

/// A counted handle to a token's state: `TokenState::handles` counts the live ones.
pub(crate) struct TokenRef(Arc<TokenState>);

/// Past this many handles the count is about to overflow: as `std::sync::Arc` does, the
/// process aborts rather than risk a count that wraps (which takes `isize::MAX` leaked clones).
const MAX_HANDLES: usize = isize::MAX as usize;

impl TokenRef {
    /// The first handle of a new token (whose count starts at one).
    pub(crate) fn new(state: TokenState) -> Self {
        TokenRef(Arc::new(state))
    }

    /// The state of a token nobody else can reach yet (no other handle, no `Weak` made of
    /// it), to set up without its lock.
    ///
    /// # Panics
    ///
    /// If another `Arc` or `Weak` of the state exists: a caller's bug.
    pub(crate) fn unique(&mut self) -> &mut TokenState {
        Arc::get_mut(&mut self.0).expect("a token set up before anyone else can reach it")
    }

    /// The state, for a tree link or a comparison.
    pub(crate) fn arc(&self) -> &Arc<TokenState> {
        &self.0
    }

    /// Cancels the token and every descendant (see [`TokenState::cancel`]).
    pub(crate) fn cancel(&self, reason: CancelReason, cause: Option<Cause>) -> Cancel {
        self.0.cancel(reason, cause)
    }

    /// A `Weak` of the state: upgrading it gives an uncounted `Arc`, fit to cancel the token
    /// (which a pending callback keeps from being spliced out), never to make a new handle.
    pub(crate) fn downgrade(&self) -> Weak<TokenState> {
        Arc::downgrade(&self.0)
    }

    /// Whether both handles reach the same token.
    pub(crate) fn ptr_eq(&self, other: &TokenRef) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The token's address: equal for two handles exactly when [`ptr_eq`](Self::ptr_eq) is
    /// (the token lives as long as either handle), for hashing.
    pub(crate) fn addr(&self) -> *const TokenState {
        Arc::as_ptr(&self.0)
    }
}

impl Deref for TokenRef {
    type Target = TokenState;

    fn deref(&self) -> &TokenState {
        &self.0
    }
}

impl Clone for TokenRef {
    fn clone(&self) -> Self {
        // ORDERING: Relaxed, as `Arc::clone`: a handle is only ever made from a live one (the
        // count never rises from zero), so the increment publishes nothing and needs no order.
        let before = self.0.handles.fetch_add(1, Ordering::Relaxed);
        if before > MAX_HANDLES {
            std::process::abort();
        }
        TokenRef(self.0.clone())
    }
}

impl Drop for TokenRef {
    fn drop(&mut self) {
        // ORDERING: Release, and Acquire (the fence) for the thread that drops the last
        // handle, as `Arc`'s drop: everything done through the other handles (a registration, a
        // new child) happens before the splice that the last one starts.
        if self.0.handles.fetch_sub(1, Ordering::Release) != 1 {
            return;
        }
        fence(Ordering::Acquire);
        // An active child holds an `Arc` of its parent (invariant 7), so a token whose only
        // `Arc` is this handle's has no child to move, and none can come (no handle is left to
        // make one, no child to splice its own into it): a leaf, the common case, skips the
        // splice and its lock. The count read is no older than every child's link made through
        // the other handles, which the fence orders before it. Any other `Arc` (a child, a
        // walk passing by) sends it the long way, which looks under the lock.
        if Arc::strong_count(&self.0) == 1 {
            return;
        }
        self.0.splice();
    }
}
