//! Links: a token's parents beyond the first (invariant 8 of `mod.rs`).
//!
//! A token made with several parents ([`CancelSource::any_of`](crate::CancelSource::any_of), a
//! job with more than one parent token) is the tree child of the first, which reaches it in
//! its cancel's walk like any child, and is linked to each other parent by a
//! [`Callback::Link`] registered there. The callback holds only a `Weak` of the token; the
//! token holds a strong `Arc` of each linked parent (as a tree child holds its parent's), so a
//! parent whose own handles went still fires its deadline into the token, and a parent's
//! ancestry stays readable from the token (its first cause, its deadline).
//!
//! A link is made only on a token nobody else has seen yet (so no cycle can form), and is cut
//! when the token leaves `ACTIVE` (its cancel or its seal takes the links out in the critical
//! section that changes its flag) or is freed, whichever comes first: a long-lived parent does
//! not collect the registrations of children that are gone.

use super::{ACTIVE, Callback, Key, Registered, TokenRef, TokenState};
use crate::sync::{self, Arc};

/// A linked parent, and the key of this token's link callback in it.
pub(super) struct Link {
    pub(super) parent: Arc<TokenState>,
    pub(super) key: Key,
}

impl Link {
    /// Deregisters every link's callback from its parent, with no lock held (a deregistration
    /// may wait for the callback, running on the parent's cancelling thread), and lets go of
    /// the parents.
    pub(super) fn release_all(links: Vec<Link>) {
        for link in links {
            link.parent.deregister_callback(link.key);
        }
    }
}

impl TokenRef {
    /// Links this token to `parent`: a cancel of `parent` cancels it with `parent`'s reason and
    /// cause (at once, if `parent` is cancelled already). A sealed `parent` (never to be
    /// cancelled) is not linked.
    ///
    /// Only for a token nobody else has seen yet: links are never added to a token that
    /// another can reach, so none can form a cycle.
    pub(crate) fn link_to(&self, parent: &TokenRef) {
        let key = match parent.register_callback(Callback::Link(self.downgrade())) {
            Registered::Pending(key) => key,
            // `parent` was cancelled (the callback cancelled this token already) or sealed.
            Registered::Settled => return,
        };
        let kept = {
            let mut shared = sync::lock(&self.shared);
            if self.flag_under_lock() == ACTIVE {
                shared.regs().links.push(Link {
                    parent: parent.arc().clone(),
                    key,
                });
                true
            } else {
                false
            }
        };
        if !kept {
            // Cancelled (by another parent) or sealed meanwhile: it needs no link.
            parent.deregister_callback(key);
        }
    }
}
