//! How a token leaves `ACTIVE`: a cancel (of this token, then of its descendants, with its
//! callbacks run in order on the cancelling thread) or a seal.

use super::wakers::ToWake;
use super::{ACTIVE, BARE, CANCELLED, CANCELLING, SEALED, TokenState, drop_each, run_contained};
use crate::reason::CancelReason;
use crate::stats;
use crate::sync::{self, Ordering, Weak, thread};

impl TokenState {
    /// Cancels with `reason`, and then every descendant; returns `true` only for the call that
    /// cancelled this token (`false` if it was cancelled already, or sealed).
    ///
    /// The tree is walked with an explicit stack (invariant 7): a node's callbacks run before
    /// its children are cancelled, and no lock is held while any of it runs.
    pub(crate) fn cancel(&self, reason: CancelReason) -> bool {
        // ORDERING: Relaxed: a sealed token stays sealed, so seeing SEALED is enough to know
        // this cancel is a no-op (the handle of every finished job drops through here). Any
        // other value is decided again under the lock.
        let flag = self.flag.load(Ordering::Relaxed);
        if flag == SEALED {
            return false;
        }
        // An ancestor cancelled already (its walk has not reached this token yet) decides the
        // reason: the cancel from above came first. So a job whose handle is dropped because
        // its request's deadline passed reads `Timeout`, not `Dropped`, however the threads
        // interleave. A BARE token has no ancestor (nothing was ever attached to it, and a
        // root never gains a parent), so it skips the walk and the extra round trip of its
        // lock, whose word shares the flag's cache line with a busy closure's polls: a plain
        // job's dropped handle reaches its closure that much sooner.
        let reason = if flag == BARE {
            reason
        } else {
            self.cancelled_ancestor_reason().unwrap_or(reason)
        };
        let Some(children) = self.cancel_node(&reason, true) else {
            return false;
        };
        let mut stack = children;
        while let Some(child) = stack.pop() {
            let Some(node) = child.upgrade() else {
                continue;
            };
            // Its parent took it out of its children already: no unlink needed.
            if let Some(grandchildren) = node.cancel_node(&reason, false) {
                stack.extend(grandchildren);
            }
            // Dropping `node` here may free it (its last handle went meanwhile); its `Drop`
            // releases its ancestors with a loop, not by recursion.
        }
        true
    }

    /// The reason of the nearest ancestor that is cancelled, if one is. Each lock is taken alone
    /// (a token's, then its parent's), never two at once.
    fn cancelled_ancestor_reason(&self) -> Option<CancelReason> {
        let mut next = sync::lock(&self.shared).parent.clone();
        while let Some(node) = next {
            if let Some(reason) = node.reason() {
                return Some(reason);
            }
            next = sync::lock(&node.shared).parent.clone();
        }
        None
    }

    /// Cancels this one token: sets the flag, wakes its waiters, runs its callbacks. Returns its
    /// children for the caller to cancel next, or `None` if it was not active. With `unlink`
    /// (a cancel of this token itself, not from its parent), it also leaves its parent's
    /// children: a cancelled token needs no parent's cancel.
    fn cancel_node(&self, reason: &CancelReason, unlink: bool) -> Option<Vec<Weak<TokenState>>> {
        let (wakers, sleepers, has_callbacks, children, parent, linked) = {
            let mut shared = sync::lock(&self.shared);
            if self.flag_under_lock() != ACTIVE {
                return None;
            }
            shared.reason = Some(reason.clone());
            // Most tokens have no waiter: then there is no registry to take out and drain,
            // which would cost about as much as the rest of a child's cancel.
            let (wakers, has_callbacks) = match shared.regs.as_mut() {
                Some(regs) => {
                    let wakers = regs.wakers.take();
                    (wakers, !regs.callbacks.is_empty())
                }
                None => (ToWake::None, false),
            };
            // ORDERING: Release publishes the reason (and the canceller's earlier writes) to
            // `is_cancelled`'s Acquire load. The store happens under the lock (invariant 1).
            let flag = if has_callbacks { CANCELLING } else { CANCELLED };
            self.flag.store(flag, Ordering::Release);
            let children = std::mem::take(&mut shared.children);
            // A cancelled token needs no parent (invariant 7). Cancelled from its parent, it
            // was taken out of the parent's list already, so nobody else touches its links.
            // (Its stale `slot` is never read again: a token without a parent unlinks nowhere.)
            // A root never gains a parent, so one without a link has nothing to leave.
            let linked = shared.parent.is_some();
            let parent = if unlink { None } else { shared.parent.take() };
            (
                wakers,
                shared.sleepers,
                has_callbacks,
                children,
                parent,
                linked,
            )
        };
        if unlink && linked {
            self.leave_parent();
        }
        // Possibly the parent's last `Arc`: its `Drop` runs here, with no lock held.
        drop(parent);
        if sleepers > 0 {
            self.changed.notify_all();
        }
        // A waker is the executor's code: contained like ours.
        wakers.for_each(|waker| {
            run_contained(|| waker.wake());
        });
        if has_callbacks {
            self.run_callbacks(reason);
        }
        Some(children)
    }

    /// Seals the token: from now on it can never be cancelled. `false` if it was cancelled
    /// first (then the cancel stands). Callbacks and wakers still registered are dropped: they
    /// can never run.
    pub(crate) fn seal(&self) -> bool {
        // ORDERING: Release, as the store below; a failure (the token is not bare) is looked
        // at again under the lock, which orders it.
        if self
            .flag
            .compare_exchange(BARE, SEALED, Ordering::Release, Ordering::Relaxed)
            .is_ok()
        {
            // Nothing attached: nothing to take out, leave or cut loose (invariant 1).
            return true;
        }
        let (taken, children, linked) = {
            let mut shared = sync::lock(&self.shared);
            if self.flag_under_lock() != ACTIVE {
                return self.flag_under_lock() == SEALED;
            }
            // ORDERING: under the lock (invariant 1), so a concurrent cancel is decided against
            // this store by the lock; readers outside it only compare with CANCELLED. Release
            // keeps every store of the flag a publishing one, at no cost on the cancel path.
            self.flag.store(SEALED, Ordering::Release);
            let taken = shared.take_all();
            let children = std::mem::take(&mut shared.children);
            (taken, children, shared.parent.is_some())
        };
        // A sealed token needs no parent's cancel: it leaves the parent's children now, so a
        // long-lived parent does not hold finished jobs until their last handle goes.
        if linked {
            self.leave_parent();
        }
        // Its children can never be cancelled by it: they become roots, and no longer keep it
        // alive.
        let mut released = Vec::new();
        self.detach(children, &mut released);
        drop(released);
        drop_each(taken);
        true
    }

    /// Runs the registered callbacks one by one, in registration order, with the lock released
    /// while each runs (invariant 5). A panicking callback is contained and counted; the rest
    /// run. A callback registered meanwhile joins the end of the line (invariant 2).
    ///
    /// One critical section per callback both retires the one that just returned and takes out
    /// the next: a guard waiting for the former then sees another key running (or none) and
    /// returns.
    fn run_callbacks(&self, reason: &CancelReason) {
        let me = thread::current().id();
        loop {
            let (next, sleepers) = {
                let mut shared = sync::lock(&self.shared);
                let sleepers = shared.sleepers;
                let regs = shared.regs();
                let next = regs.callbacks.pop_first();
                regs.running = next.as_ref().map(|(key, _)| (*key, me));
                if next.is_none() {
                    // ORDERING: Release, as every store of the flag; the cancelled bit was
                    // published by the cancel's store already, so readers outside the lock see
                    // no change. Under the lock (invariant 4).
                    self.flag.store(CANCELLED, Ordering::Release);
                }
                (next, sleepers)
            };
            // Wakes guards waiting for the callback that just returned (invariant 6).
            if sleepers > 0 {
                self.changed.notify_all();
            }
            let Some((_, callback)) = next else {
                return;
            };
            if run_contained(|| callback.call(reason)).is_none() {
                stats::callback_panicked();
            }
        }
    }
}
