//! The token tree: how a child is linked to its parent, how it leaves, and how a token whose
//! last handle went is spliced out.
//!
//! # Links
//!
//! An active child holds a strong `Arc` of its parent (`Shared::parent`) and sits in its
//! parent's `children` (a `Weak`, so a parent never keeps a child alive) at the index its own
//! `slot` names. A child's `parent` changes under its own lock (and its parent's, while the
//! parent's list holds it and it is active); its `slot` belongs to the list its entry is in,
//! and changes only under that list's lock (see `TokenState::slot`), so the slot a leaving
//! child reads under its parent's lock is the one the list holds it at.
//!
//! A token cuts its links when it leaves `ACTIVE`: a cancelled or sealed token needs no parent
//! (its children are cancelled with it, or can never be), so neither side keeps the other. It
//! gives up its children in the critical section that changes its flag. A cancelled token with
//! nothing below it cuts its link to the parent there too (no descendant looks up through it)
//! and leaves the parent's list in the second phase under the parent's lock alone
//! ([`TokenState::leave_list`]); any other leaves both with both locks held
//! ([`TokenState::leave_parent`]). A list may so hold, for a moment, a cancelled child that no
//! longer names it: a splice or a seal of the parent then leaves it out.
//!
//! # Splicing
//!
//! When a token's last handle goes ([`TokenRef`]'s drop), nobody can cancel it, register on it
//! or make a child of it any more, so it is taken out of the tree ([`TokenState::splice`]): its
//! children move to its parent (a cancel from above still reaches them), or, for a root, become
//! roots (a root nobody can cancel cancels none of them), and it leaves its parent's list. A
//! long-lived leaf then keeps no dead ancestor alive. A token with a callback still registered
//! (a detached guard, a `cancel_after` deadline) is not spliced: a cancel from above, or from
//! its deadline, must still run it.
//!
//! # Lock order
//!
//! An ancestor's lock before a descendant's. Splicing keeps every ancestor an ancestor (a child
//! only ever moves up, to its grandparent), so the order is the same before and after. Whoever
//! reads a token's parent under the token's lock and then wants both locks releases the
//! token's, locks the parent, locks the token again, and checks the parent is still the same.
//! No path holds two siblings' locks at once.

use super::{ACTIVE, CANCELLED_BIT, LIFECYCLE, SEALED, Shared, TokenRef, TokenState};
use crate::sync::{self, Arc, Ordering, Weak};

/// A child's index in its parent's `children`, in four bytes: `u32::MAX` for none (not linked,
/// or, past four billion children of one parent, never known; such a child's entry is then
/// only freed by the parent's cancel, seal, splice or drop, or swept out as a dead one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Slot(u32);

impl Slot {
    pub(super) const NONE: Slot = Slot(u32::MAX);

    fn at(index: usize) -> Slot {
        u32::try_from(index)
            .ok()
            .filter(|&index| index != u32::MAX)
            .map_or(Slot::NONE, Slot)
    }

    /// The value `TokenState::slot` holds.
    pub(super) const fn raw(self) -> u32 {
        self.0
    }
}

impl TokenState {
    /// Records this token's index in its parent's list (see `TokenState::slot` for who may).
    pub(super) fn set_slot(&self, slot: Slot) {
        // ORDERING: Relaxed: ordered by the lock the caller holds (see `TokenState::slot`).
        self.slot.store(slot.raw(), Ordering::Relaxed);
    }

    /// The index, leaving none behind (see `TokenState::slot` for who may).
    pub(super) fn take_slot(&self) -> Option<u32> {
        // ORDERING: Relaxed, as in `set_slot`. A load and a store, not a swap: the caller's
        // lock (or its `&mut`) already excludes every other writer.
        let index = self.slot.load(Ordering::Relaxed);
        self.slot.store(Slot::NONE.raw(), Ordering::Relaxed);
        (index != Slot::NONE.raw()).then_some(index)
    }
}

/// Tokens let go of while locks were held, dropped once every lock is released: freeing a
/// token runs user code (the drops of its callbacks) and takes locks (its own unlink).
type Released = Vec<Arc<TokenState>>;

/// What [`TokenState::splice_into`] found.
enum Splice {
    /// Spliced out, or nothing to do.
    Done,
    /// The token moved to another parent meanwhile: look again.
    Moved,
    /// The parent is sealed: the token left it and now splices as a root.
    Root,
}

impl TokenState {
    /// A new child of `parent`: cancelled when `parent` is (at once, if it is already), never
    /// by a sealed parent.
    pub(crate) fn child_of(parent: &TokenRef) -> TokenRef {
        let mut child = TokenRef::new(TokenState::with_flag(ACTIVE));
        let cancelled = {
            let mut up = sync::lock(&parent.shared);
            match parent.flag_under_lock() {
                flag if flag & CANCELLED_BIT != 0 => {
                    parent.reason_now().map(|reason| (reason, up.cause.clone()))
                }
                SEALED => None,
                _ => {
                    // Nobody else can see the child yet: its fields are set through `&mut`,
                    // with no lock, before the parent's list holds it.
                    let me = child.unique();
                    me.set_slot(Slot::at(up.children.len()));
                    sync::get_mut(&mut me.shared).parent = Some(parent.arc().clone());
                    up.children.push(child.downgrade());
                    None
                }
            }
        };
        if let Some((reason, cause)) = cancelled {
            child.cancel(reason, cause);
        }
        child
    }

    /// Removes the child at `addr` from its slot `index` of this token's children, if the slot
    /// still holds it: for a child being freed (its last `Arc` gone), whose slot nobody changes
    /// any more.
    ///
    /// The child's memory may be freed already (its entry purged as a dead one by a sibling's
    /// unlink) and reused by a new token at the same address, in the same slot. So the entry is
    /// removed only if it is dead too: a live token's is never taken, and either of two dead
    /// entries at one address may be removed by the other's unlink, which then finds nothing to
    /// do (as after a purge).
    fn unlink_child(&self, index: u32, addr: *const TokenState) {
        let mut up = sync::lock(&self.shared);
        let dead = up
            .children
            .get(index as usize)
            .is_some_and(|slot| slot.strong_count() == 0);
        let moved = if dead {
            self.remove_child(&mut up, index, addr)
        } else {
            None
        };
        drop(up);
        // `moved` may have been the last handle to that child (dropped meanwhile): it is
        // dropped here, with no lock held, and unlinks itself.
        drop(moved);
    }

    /// Takes this token out of `parent`'s list, if the list still holds it: a cancelled token
    /// with nothing below it that cut its link to `parent` as it was cancelled (its own cancel,
    /// or one through a link). Only `parent`'s lock is taken: the token's slot is the list's
    /// (see `TokenState::slot`), and a splice or a seal of `parent` meanwhile leaves it out
    /// (it no longer names `parent`), so the slot finds nothing of it then.
    pub(super) fn leave_list(&self, parent: Arc<TokenState>) {
        let moved = {
            let mut up = sync::lock(&parent.shared);
            self.take_slot()
                .and_then(|index| parent.remove_child(&mut up, index, self))
        };
        // Either may be the last `Arc` of its token: dropped with no lock held.
        drop(moved);
        drop(parent);
    }

    /// Takes this live token out of its parent's children and lets go of the parent (a cancel
    /// or a seal of this token itself). Both locks are held while the slot is read, so the slot
    /// is the one the parent's list holds it at.
    ///
    /// `parent`: the parent the caller read under this token's lock a moment ago, if it did;
    /// it is checked again with both locks held, as one read here would be.
    pub(super) fn leave_parent(&self, parent: Option<Arc<TokenState>>) {
        let mut released = Released::new();
        let mut known = parent;
        loop {
            let parent = match known.take() {
                Some(parent) => parent,
                None => match sync::lock(&self.shared).parent.clone() {
                    Some(parent) => parent,
                    None => break,
                },
            };
            let mut up = sync::lock(&parent.shared);
            let mut me = sync::lock(&self.shared);
            if !is_child_of(&me, Arc::as_ptr(&parent)) {
                // Moved up by a splice meanwhile: leave the new parent.
                continue;
            }
            let slot = self.take_slot();
            released.extend(me.parent.take());
            drop(me);
            if let Some(index) = slot {
                released.extend(parent.remove_child(&mut up, index, self));
            }
            break;
        }
        drop(released);
    }

    /// With this token's lock held (`up`): removes the child at `addr` from slot `index` if the
    /// slot still holds it, moving the last child into the gap and telling it its new slot.
    /// Returns that moved child, to be dropped once the lock is released.
    ///
    /// A child found dead in the gap (its last `Arc` gone, its `Drop` not yet past its unlink)
    /// cannot be told its new slot, so it is removed too: its own unlink then finds it gone.
    pub(super) fn remove_child(
        &self,
        up: &mut Shared,
        index: u32,
        addr: *const TokenState,
    ) -> Option<Arc<TokenState>> {
        let index = index as usize;
        let holds_it = up
            .children
            .get(index)
            .is_some_and(|slot| std::ptr::eq(slot.as_ptr(), addr));
        if !holds_it {
            // Taken out by a cancel, a seal, a splice or a purge already.
            return None;
        }
        up.children.swap_remove(index);
        loop {
            let moved = up.children.get(index)?;
            let Some(moved) = moved.upgrade() else {
                up.children.swap_remove(index);
                continue;
            };
            // A live child's slot is the index of its entry in this list (it may already have cut
            // its link to this token, being cancelled, until it leaves the list): this list's
            // to set, under this lock, without the child's.
            if !moved_keeps_its_old_slot() {
                moved.set_slot(Slot::at(index));
            }
            return Some(moved);
        }
    }

    /// The last handle went: takes this token out of the tree (see the module docs).
    pub(super) fn splice(&self) {
        // ORDERING: Acquire pairs with the Release store of the flag: a token that left ACTIVE
        // gave up its children in the critical section that stored it, and the thread that
        // stored it takes it out of its parent's list (`leave_parent`), so nothing is left to
        // do here. A stale ACTIVE is looked at again under the lock. A BARE token (a root that
        // nothing was ever attached to) has no children to move either.
        if self.flag.load(Ordering::Acquire) & LIFECYCLE != ACTIVE {
            return;
        }
        let mut released = Released::new();
        loop {
            let parent = {
                let me = sync::lock(&self.shared);
                if me.children.is_empty() {
                    // A leaf: nothing to move, and none can come (no handle is left to make a
                    // child, and no child is left to move its own children in). It leaves its
                    // parent's list in its `Drop`, when the `Arc` of this last handle goes.
                    return;
                }
                me.parent.clone()
            };
            let found = match &parent {
                Some(parent) => self.splice_into(parent, &mut released),
                None => Splice::Root,
            };
            match found {
                Splice::Done => break,
                Splice::Moved => continue,
                Splice::Root => {
                    self.splice_root(&mut released);
                    break;
                }
            }
        }
        drop(released);
    }

    /// Moves this token's children to `parent` and takes it out of `parent`'s children, if
    /// `parent` is still its parent, both are active, and it has no callback left.
    fn splice_into(&self, parent: &Arc<TokenState>, released: &mut Released) -> Splice {
        let mut up = sync::lock(&parent.shared);
        let mut me = sync::lock(&self.shared);
        if !is_child_of(&me, Arc::as_ptr(parent)) {
            return Splice::Moved;
        }
        if !self.spliceable(&me) {
            return Splice::Done;
        }
        match parent.flag_under_lock() {
            ACTIVE => {}
            // The parent's cancel took its children out already and is walking to this one,
            // which is cancelled (and its links cut) in its turn.
            flag if flag & CANCELLED_BIT != 0 => return Splice::Done,
            // The parent cuts its children loose (`seal`); this one leaves first.
            _ => {
                released.extend(me.parent.take());
                self.set_slot(Slot::NONE);
                return Splice::Root;
            }
        }
        // This token's lock stays held until its children moved: a child splicing itself
        // meanwhile must not move its own children into this token, now out of the tree.
        let children = std::mem::take(&mut me.children);
        let slot = self.take_slot();
        released.extend(me.parent.take());
        for weak in children {
            let Some(child) = weak.upgrade() else {
                continue;
            };
            {
                // The grandparent, this token, then the child (lock order).
                let mut theirs = sync::lock(&child.shared);
                // A child that already let go of this token (cancelled from here, or leaving)
                // stays out; one still linked moves up, even if it is about to leave: it then
                // leaves the grandparent instead.
                if is_child_of(&theirs, self) {
                    child.set_slot(Slot::at(up.children.len()));
                    released.extend(theirs.parent.replace(parent.clone()));
                    up.children.push(weak);
                }
            }
            released.push(child);
        }
        // Out of the tree: released before its parent's list is touched, so that no two
        // siblings are ever locked together.
        drop(me);
        if let Some(index) = slot {
            released.extend(parent.remove_child(&mut up, index, self));
        }
        Splice::Done
    }

    /// A root with no handle and no callback can never be cancelled: its children become
    /// roots, and it is freed as soon as no child holds it.
    fn splice_root(&self, released: &mut Released) {
        let mut me = sync::lock(&self.shared);
        if !self.spliceable(&me) {
            return;
        }
        // Held while the children go, as in `splice_into`.
        let children = std::mem::take(&mut me.children);
        self.detach(children, released);
    }

    /// Cuts the children taken out of this token's list loose: each that still names this token
    /// as its parent lets go of it and becomes a root.
    pub(super) fn detach(&self, children: Vec<Weak<TokenState>>, released: &mut Released) {
        for weak in children {
            let Some(child) = weak.upgrade() else {
                continue;
            };
            {
                let mut theirs = sync::lock(&child.shared);
                if is_child_of(&theirs, self) {
                    released.extend(theirs.parent.take());
                    child.set_slot(Slot::NONE);
                }
            }
            released.push(child);
        }
    }

    /// Whether this token, with its lock held, may be spliced out: still active, no callback
    /// waits for its cancel, and it has no linked parent (whose cancel must still reach its
    /// children through it: invariant 8).
    fn spliceable(&self, me: &Shared) -> bool {
        self.flag_under_lock() == ACTIVE
            && me
                .regs
                .as_ref()
                .is_none_or(|r| r.callbacks.is_empty() && r.links.is_empty())
    }
}

/// Whether a sibling moved into a gap keeps its old index. Never, but in a loom build whose
/// negative control leaves it stale: the sibling then leaves the wrong entry behind.
fn moved_keeps_its_old_slot() -> bool {
    #[cfg(tethered_loom)]
    if crate::fault::put_back("moved_sibling_keeps_its_old_slot") {
        return true;
    }
    false
}

/// Whether the token whose fields are `shared` has `parent` as its parent.
fn is_child_of(shared: &Shared, parent: *const TokenState) -> bool {
    shared
        .parent
        .as_ref()
        .is_some_and(|p| std::ptr::eq(Arc::as_ptr(p), parent))
}

impl Drop for TokenState {
    /// Unlinks this token from its parent and its linked parents and lets go of them; a parent
    /// whose last `Arc` that was is released the same way, from a work list rather than by
    /// recursion, so a chain of any length (of parents or links) drops on any stack. (A chain
    /// whose tokens have handles is spliced as its handles go; a chain is left to this loop
    /// when its tokens hold callbacks or links.)
    fn drop(&mut self) {
        let slot = self.take_slot();
        let (taken, parent, links) = {
            let shared = sync::get_mut(&mut self.shared);
            let links = shared
                .regs
                .as_mut()
                .map(|regs| std::mem::take(&mut regs.links))
                .unwrap_or_default();
            (shared.take_all(), shared.parent.take(), links)
        };
        // Callbacks of detached guards: their captured values are user code.
        super::drop_each(taken);
        let mut work = Work::default();
        Release::push(&mut work, self, slot, parent, links);
        while let Some(Release { node, from }) = work.pop() {
            match from {
                From::Child { index, addr } => {
                    if let Some(index) = index {
                        node.unlink_child(index, addr);
                    }
                }
                From::Link(key) => node.deregister_callback(key),
            }
            // `addr` names the token to unlink next: a parent whose last `Arc` went in this
            // loop. Its memory may be freed and reused before it is unlinked by address, which
            // `unlink_child` allows for.
            let addr: *const TokenState = Arc::as_ptr(&node);
            if let Some(mut state) = Arc::into_inner(node) {
                // That was the last `Arc`: release its parents in this loop, then drop it (its
                // `Drop` finds no parent or link left and only drops its callbacks).
                let slot = state.take_slot();
                let shared = sync::get_mut(&mut state.shared);
                let parent = shared.parent.take();
                let links = shared
                    .regs
                    .as_mut()
                    .map(|regs| std::mem::take(&mut regs.links))
                    .unwrap_or_default();
                Release::push(&mut work, addr, slot, parent, links);
                drop(state);
            }
        }
    }
}

/// The work list of `TokenState`'s drop: a stack whose top is held inline, so that a drop with
/// one parent to let go of (a child token's, and each ancestor freed after it) allocates
/// nothing; only a token with links, or a parent and links, spills into the `Vec`.
#[derive(Default)]
struct Work {
    top: Option<Release>,
    rest: Vec<Release>,
}

impl Work {
    fn push(&mut self, release: Release) {
        if let Some(below) = self.top.replace(release) {
            self.rest.push(below);
        }
    }

    fn pop(&mut self) -> Option<Release> {
        self.top.take().or_else(|| self.rest.pop())
    }
}

/// A parent to let go of in `TokenState`'s drop, and what to take out of it first.
struct Release {
    node: Arc<TokenState>,
    from: From,
}

/// What a freed token leaves in a parent: its slot in the parent's children, or its link
/// callback.
enum From {
    Child {
        index: Option<u32>,
        addr: *const TokenState,
    },
    Link(super::Key),
}

impl Release {
    /// Queues a freed token's parent (with its slot) and linked parents (with their keys).
    fn push(
        work: &mut Work,
        addr: *const TokenState,
        slot: Option<u32>,
        parent: Option<Arc<TokenState>>,
        links: Vec<super::links::Link>,
    ) {
        for link in links {
            work.push(Release {
                node: link.parent,
                from: From::Link(link.key),
            });
        }
        if let Some(node) = parent {
            work.push(Release {
                node,
                from: From::Child { index: slot, addr },
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::{CancelReason, CancelSource};

    /// A long-lived leaf keeps none of its dead ancestors: each level whose handles went was
    /// spliced out and freed, and a cancel of the root still reaches the leaf.
    #[test]
    fn a_leaf_keeps_no_dead_ancestor_alive() {
        let root = CancelSource::new();
        let mut ancestors = Vec::new();
        let mut leaf = root.child();
        for _ in 0..100 {
            ancestors.push(leaf.state.downgrade());
            leaf = leaf.child();
        }
        assert!(
            ancestors.iter().all(|weak| weak.upgrade().is_none()),
            "every level between the root and the leaf was freed"
        );
        assert_eq!(
            root.token().registrations(),
            1,
            "the leaf hangs off the root"
        );
        root.cancel(CancelReason::Shutdown);
        assert_eq!(leaf.token().reason(), Some(CancelReason::Shutdown));
    }

    /// A level with a callback still registered stays: the root's cancel runs it.
    #[test]
    fn a_level_with_a_detached_callback_stays_and_runs_it() {
        let root = CancelSource::new();
        let middle = root.child();
        let weak = middle.state.downgrade();
        let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let seen = ran.clone();
        middle
            .token()
            .on_cancel(move |_| seen.store(true, std::sync::atomic::Ordering::SeqCst))
            .detach();
        let leaf = middle.child();
        drop(middle);
        assert!(weak.upgrade().is_some(), "kept for its callback");
        root.cancel(CancelReason::Timeout);
        assert!(ran.load(std::sync::atomic::Ordering::SeqCst));
        assert_eq!(leaf.token().reason(), Some(CancelReason::Timeout));
        drop(leaf);
        assert!(weak.upgrade().is_none(), "freed once cancelled and unheld");
    }

    /// A root nobody holds can never be cancelled: its children let go of it.
    #[test]
    fn an_unheld_root_is_freed_while_its_children_live() {
        let root = CancelSource::new();
        let weak = root.state.downgrade();
        let child = root.child();
        drop(root);
        assert!(weak.upgrade().is_none());
        assert!(!child.is_cancelled());
        assert!(child.cancel(CancelReason::Requested));
    }

    /// Children of a sealed token no longer keep it alive.
    #[test]
    fn a_sealed_token_lets_go_of_its_children() {
        let sealed = CancelSource::new();
        let weak = sealed.state.downgrade();
        let child = sealed.child();
        assert!(sealed.state.seal());
        drop(sealed);
        assert!(weak.upgrade().is_none());
        assert!(!child.is_cancelled());
    }
}
