//! A token's deadline: the earliest instant at which a timer cancels it, set by
//! `cancel_at`/`cancel_after` on the token itself and read through its ancestors, so a child
//! inherits the earliest deadline above it (and one set on a parent after the child was made),
//! through its tree parent and its linked parents alike.
//!
//! A deadline lives in the token's registrations, which exist whenever it has one: the timer
//! that fires it is a callback of the same token, so a token without a deadline pays nothing.
//! Reading walks up the parents and links one lock at a time (the lock order of `tree.rs`
//! allows any single lock), with a stack; a token with a deadline is never spliced out of the
//! tree (its timer callback keeps it), so no deadline is skipped by a splice.

use std::time::Instant;

use super::TokenState;
use crate::sync::{self, Arc};

impl TokenState {
    /// Records `deadline` for this token, keeping the earlier one if it has one already.
    pub(crate) fn record_deadline(&self, deadline: Instant) {
        let mut shared = sync::lock(&self.shared);
        // A holder of the lock makes a bare token active before it attaches anything.
        self.flag_under_lock();
        let regs = shared.regs();
        regs.deadline = Some(regs.deadline.map_or(deadline, |own| own.min(deadline)));
    }

    /// The earliest deadline of this token and of its ancestors (parents and links), if any
    /// has one.
    pub(crate) fn deadline(&self) -> Option<Instant> {
        let mut earliest = own_deadline(&sync::lock(&self.shared));
        let mut stack: Vec<Arc<TokenState>> = Vec::new();
        self.push_ancestors(&mut stack);
        while let Some(node) = stack.pop() {
            earliest = earlier(earliest, own_deadline(&sync::lock(&node.shared)));
            node.push_ancestors(&mut stack);
            // `node` is dropped with no lock held: it may be the last reference.
        }
        earliest
    }
}

fn own_deadline(shared: &super::Shared) -> Option<Instant> {
    shared.regs.as_ref().and_then(|regs| regs.deadline)
}

fn earlier(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}
