//! How a token leaves `ACTIVE`: a cancel (of this token, then of its descendants, with its
//! callbacks run in order on the cancelling thread) or a seal.

use super::links::Link;
use super::wakers::ToWake;
use super::{
    ACTIVE, BARE, CANCELLED, CANCELLING, Callback, Cancel, SEALED, Stop, TokenState, drop_each,
    run_contained,
};
use crate::contain::drop_contained;
use crate::reason::{CancelReason, Cause};
use crate::stats;
use crate::sync::{self, Arc, Ordering, Weak, thread};

/// A token a cancel's walk reaches next.
pub(super) enum Next {
    /// A child, taken out of its parent's list by the parent's cancel.
    Child(Weak<TokenState>),
    /// A token linked to a cancelled parent (invariant 8).
    Linked(Arc<TokenState>),
}

impl TokenState {
    /// Cancels with `reason` and `cause`, and then every descendant: [`Cancel::Won`] for the
    /// call that cancelled this token with what it gave, [`Cancel::Inherited`] for one that
    /// cancelled it with a cancelled ancestor's reason (invariant 9), [`Cancel::Lost`] if it
    /// was cancelled already, or sealed.
    ///
    /// The tree is walked with an explicit stack (invariant 7): a node's callbacks (its links
    /// among them) run before its children are cancelled, and no lock is held while any of it
    /// runs.
    pub(crate) fn cancel(&self, reason: CancelReason, cause: Option<Cause>) -> Cancel {
        // ORDERING: Relaxed: a sealed token stays sealed, so seeing SEALED is enough to know
        // this cancel is a no-op (the handle of every finished job drops through here). Any
        // other value is decided again under the lock.
        let flag = self.flag.load(Ordering::Relaxed);
        if flag == SEALED {
            return Cancel::Lost;
        }
        let sequence = sync::next_sequence();
        // An ancestor cancelled already (its walk has not reached this token yet) decides the
        // reason: the cancel from above came first. So a job whose handle is dropped because
        // its request's deadline passed reads `Timeout`, not `Dropped`, however the threads
        // interleave, through a tree parent or a link. A BARE token has no ancestor (nothing
        // was ever attached to it, and a root never gains a parent), so it skips the walk and
        // the extra round trip of its lock, whose word shares the flag's cache line with a
        // busy closure's polls: a plain job's dropped handle reaches its closure that much
        // sooner.
        let inherited = if flag == BARE {
            None
        } else {
            self.earliest_cancelled_ancestor()
        };
        let (outcome, first) = match inherited {
            Some(stop) => (Cancel::Inherited, stop),
            None => (
                Cancel::Won,
                Stop {
                    reason,
                    cause,
                    sequence,
                },
            ),
        };
        // The stops a walk hands down: the walk's own first, and one for each token below
        // that an earlier cancel reached first (invariant 9), for everything below it.
        let mut stops = vec![first];
        let mut stack = Vec::new();
        if !self.cancel_node(&stops[0], 0, true, &mut stack) {
            return Cancel::Lost;
        }
        while let Some((next, mut stop)) = stack.pop() {
            let (node, unlink) = match next {
                // Its parent took it out of its children already: no unlink needed.
                Next::Child(child) => match child.upgrade() {
                    Some(node) => (node, false),
                    None => continue,
                },
                // Reached through a link: it leaves its own tree parent as it is cancelled.
                Next::Linked(node) => (node, true),
            };
            // A token with another way up than this walk's may have an ancestor that an
            // earlier cancel reached first, its walk still on the way here: that cancel
            // decides (invariant 9). A plain child has only the way the walk came.
            if unlink || node.has_links() {
                if let Some(earlier) = node
                    .earliest_cancelled_ancestor()
                    .filter(|earlier| sync::sequence_before(earlier.sequence, stops[stop].sequence))
                {
                    stops.push(earlier);
                    stop = stops.len() - 1;
                }
            }
            node.cancel_node(&stops[stop], stop, unlink, &mut stack);
            // Dropping `node` here may free it (its last handle went meanwhile); its `Drop`
            // releases its ancestors from a work list, not by recursion.
        }
        outcome
    }

    /// Whether this token has linked parents (invariant 8).
    fn has_links(&self) -> bool {
        let shared = sync::lock(&self.shared);
        shared
            .regs
            .as_ref()
            .is_some_and(|regs| !regs.links.is_empty())
    }

    /// The stop of the cancelled ancestor that was cancelled first (the smallest sequence
    /// number), through parents and links, if one is cancelled. A cancelled ancestor's own stop
    /// already is the first of those above it, so the walk goes no higher than one. Each lock
    /// is taken alone (a token's, then an ancestor's), never two at once; the walk uses a
    /// stack, not recursion, however deep the ancestry.
    fn earliest_cancelled_ancestor(&self) -> Option<Stop> {
        let mut stack: Vec<Arc<TokenState>> = Vec::new();
        self.push_ancestors(&mut stack);
        let mut earliest: Option<Stop> = None;
        while let Some(node) = stack.pop() {
            match node.stop_in_sequence() {
                Some(stop) => {
                    if earliest
                        .as_ref()
                        .is_none_or(|first| sync::sequence_before(stop.sequence, first.sequence))
                    {
                        earliest = Some(stop);
                    }
                }
                None => node.push_ancestors(&mut stack),
            }
            // `node` is dropped with no lock held: it may be the last reference.
        }
        earliest
    }

    /// Pushes this token's parent and linked parents onto `stack`.
    pub(super) fn push_ancestors(&self, stack: &mut Vec<Arc<TokenState>>) {
        let shared = sync::lock(&self.shared);
        stack.extend(shared.parent.clone());
        if let Some(regs) = &shared.regs {
            stack.extend(regs.links.iter().map(|link| link.parent.clone()));
        }
    }

    /// Cancels this one token: sets the flag, wakes its waiters, runs its callbacks. Pushes its
    /// linked children and its children onto `next`, for the caller to cancel next, and
    /// returns `true`; returns `false` if it was not active. With `unlink` (a cancel of this
    /// token itself, not from its parent), it also leaves its parent's children: a cancelled
    /// token needs no parent's cancel.
    fn cancel_node(
        &self,
        stop: &Stop,
        stop_index: usize,
        unlink: bool,
        next: &mut Vec<(Next, usize)>,
    ) -> bool {
        let (reason, cause) = (stop.reason, stop.cause.as_ref());
        let mut checked = false;
        let (wakers, sleepers, has_callbacks, children, parent, linked, links) = loop {
            let mut shared = sync::lock(&self.shared);
            if self.flag_under_lock() != ACTIVE {
                return false;
            }
            // Invariant 10: work that finished unreported is not cancelled but sealed.
            let check = match &shared.regs {
                Some(regs) if !checked && asks_finished_check() => regs.finished.clone(),
                _ => None,
            };
            if let Some(finished) = check {
                drop(shared);
                checked = true;
                // The bridge's own look (a `waitid`), contained as user code is.
                if run_contained(|| finished()).unwrap_or(false) {
                    self.seal();
                    return false;
                }
                continue;
            }
            shared.reason = Some(reason);
            shared.cause = cause.cloned();
            shared.sequence = stop.sequence;
            // Most tokens have no waiter: then there is no registry to take out and drain,
            // which would cost about as much as the rest of a child's cancel.
            let (wakers, has_callbacks, links) = match shared.regs.as_mut() {
                Some(regs) => {
                    let wakers = regs.wakers.take();
                    let links = std::mem::take(&mut regs.links);
                    // Decided: the check (invariant 10) is of no more use, and may hold a
                    // descriptor. Dropped with the links, outside the lock.
                    let finished = regs.finished.take();
                    (wakers, !regs.callbacks.is_empty(), (links, finished))
                }
                None => (ToWake::None, false, (Vec::new(), None)),
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
            break (
                wakers,
                shared.sleepers,
                has_callbacks,
                children,
                parent,
                linked,
                links,
            );
        };
        if unlink && linked {
            self.leave_parent();
        }
        // A cancelled token needs no linked parent either (invariant 8).
        let (links, finished) = links;
        Link::release_all(links);
        drop_contained(finished);
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
            self.run_callbacks(reason, cause, stop_index, next);
        }
        next.extend(
            children
                .into_iter()
                .map(|child| (Next::Child(child), stop_index)),
        );
        true
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
        let (taken, children, linked, links) = {
            let mut shared = sync::lock(&self.shared);
            if self.flag_under_lock() != ACTIVE {
                return self.flag_under_lock() == SEALED;
            }
            // ORDERING: under the lock (invariant 1), so a concurrent cancel is decided against
            // this store by the lock; readers outside it only compare with CANCELLED. Release
            // keeps every store of the flag a publishing one, at no cost on the cancel path.
            self.flag.store(SEALED, Ordering::Release);
            let taken = shared.take_all();
            let (links, finished) = shared
                .regs
                .as_mut()
                .map(|regs| (std::mem::take(&mut regs.links), regs.finished.take()))
                .unwrap_or_default();
            let children = std::mem::take(&mut shared.children);
            (taken, children, shared.parent.is_some(), (links, finished))
        };
        // A sealed token needs no parent's cancel: it leaves the parent's children now, so a
        // long-lived parent does not hold finished jobs until their last handle goes. Nor its
        // linked parents' (invariant 8).
        if linked {
            self.leave_parent();
        }
        let (links, finished) = links;
        Link::release_all(links);
        drop_contained(finished);
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
    ///
    /// A link (invariant 8) is not run here but queued in `next`, so that a cancel reaches a
    /// chain of linked tokens of any length with the walk's loop, never by recursion.
    fn run_callbacks(
        &self,
        reason: CancelReason,
        cause: Option<&Cause>,
        stop_index: usize,
        next: &mut Vec<(Next, usize)>,
    ) {
        let me = thread::current().id();
        loop {
            let (callback, sleepers) = {
                let mut shared = sync::lock(&self.shared);
                let sleepers = shared.sleepers;
                let regs = shared.regs();
                let callback = regs.callbacks.pop_first();
                regs.running = callback.as_ref().map(|(key, _)| (*key, me));
                if callback.is_none() {
                    // ORDERING: Release, as every store of the flag; the cancelled bit was
                    // published by the cancel's store already, so readers outside the lock see
                    // no change. Under the lock (invariant 4).
                    self.flag.store(CANCELLED, Ordering::Release);
                }
                (callback, sleepers)
            };
            // Wakes guards waiting for the callback that just returned (invariant 6).
            if sleepers > 0 {
                self.changed.notify_all();
            }
            let Some((_, callback)) = callback else {
                return;
            };
            if let Callback::Link(child) = &callback {
                next.extend(child.upgrade().map(|node| (Next::Linked(node), stop_index)));
                continue;
            }
            if run_contained(|| callback.call(reason, cause)).is_none() {
                stats::callback_panicked();
            }
        }
    }
}

/// Whether a cancel asks a token's finished check (invariant 10). Always, but in a loom build
/// whose negative control puts back the old path, where a cancel never asked and so stopped
/// work that had finished unreported.
fn asks_finished_check() -> bool {
    #[cfg(tethered_loom)]
    if crate::fault::put_back("cancel_ignores_finished_work") {
        return false;
    }
    true
}
