//! How a token leaves `ACTIVE`: a cancel (of this token and every descendant, in two phases:
//! the flags first, then the wakers and the callbacks, in order, on the cancelling thread) or
//! a seal.

use super::links::Link;
use super::wakers::ToWake;
use super::{
    ACTIVE, BARE, CANCELLED, CANCELLED_BIT, CANCELLING, Callback, Cancel, DESCENDING,
    DESCENT_AWAITED, FinishedCheck, LIFECYCLE, ROOT, SEALED, Shared, Stop, TokenState, drop_each,
    reason_bits, run_contained,
};
use crate::contain::drop_contained;
use crate::reason::{CancelReason, Cause};
use crate::stats;
use crate::sync::{self, Arc, Ordering, Weak, thread};

/// A token a cancel's walk reaches next, or is done with.
pub(super) enum Next {
    /// A child, taken out of its parent's list by the parent's cancel.
    Child(Weak<TokenState>),
    /// A token linked to a cancelled parent (invariant 8).
    Linked(Arc<TokenState>),
}

/// How a cancel's walk came to a token.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Via {
    /// The token the cancel was called on: it leaves its tree parent in the second phase, and
    /// takes the stop of a cancelled ancestor, if it has one (invariant 9).
    Own,
    /// From its tree parent, which took it out of its children already: nothing to leave. A
    /// token with links of its own has another way up, where an earlier cancel may decide.
    Parent,
    /// Through a link (invariant 8): it leaves its own tree parent in the second phase, and an
    /// earlier cancel above it may decide.
    Link,
}

/// What a walk owes a token it cancelled once its first phase is over (invariant 11): the
/// links it cuts, then its callbacks. Most tokens are owed nothing (a plain child).
struct Owed {
    /// `None`: the token the walk began at.
    node: Option<Arc<TokenState>>,
    /// Its index in the walk's stops: the reason and cause its callbacks are given.
    stop: usize,
    /// How it leaves its tree parent (a token cancelled by its own cancel, or through a link).
    leave: Leave,
    /// Its linked parents, whose link callbacks are deregistered (invariant 8).
    links: Vec<Link>,
    /// Its finished check (invariant 10), of no more use.
    finished: Option<FinishedCheck>,
    /// Whether it has callbacks to run: its flag is `CANCELLING` until they have.
    callbacks: bool,
}

/// How a token cancelled by its own cancel, or through a link, leaves its tree parent in the
/// second phase (invariant 7).
enum Leave {
    /// It has no parent, or was reached from it (and so taken out of its list already).
    Nothing,
    /// Out of this parent's list: the token, with nothing below it, cut its link to the parent
    /// as it was cancelled.
    List(Arc<TokenState>),
    /// Out of this parent's list and its link to it, both cut with both locks held: a token
    /// with something below it keeps its link until its descent is over, as a descendant's
    /// look for cancelled ancestors goes up through it (invariant 9). The parent it had when
    /// cancelled, which `leave_parent` checks again.
    Parent(Arc<TokenState>),
}

impl Leave {
    fn owed(&self) -> bool {
        !matches!(self, Leave::Nothing)
    }
}

/// What [`TokenState::cancel_node`] found. What it took out of a token it cancelled went to
/// the walk: what lies below to its frames, what the second phase owes the token to its list
/// (the first token's to `mine`). Nothing large is returned, so nothing large is moved.
enum Reached {
    /// Cancelled by this walk; whether the walk goes on below it.
    Cancelled { descends: bool },
    /// Cancelled by another walk, which may not have reached all its descendants yet: the
    /// first token of that walk (`None`: this one), whose `DESCENDING` bit says.
    Descending(Option<Weak<TokenState>>),
    /// Sealed, or cancelled with every descendant reached.
    Settled,
}

/// The stops a walk hands down (invariant 9): its own first, and one for each token below
/// that an earlier cancel reached first, for everything below that token. The first is held
/// inline: a cancel of one token allocates nothing.
struct Stops {
    first: Stop,
    rest: Vec<Stop>,
}

impl Stops {
    fn get(&self, index: usize) -> &Stop {
        match index {
            0 => &self.first,
            _ => &self.rest[index - 1],
        }
    }

    fn push(&mut self, stop: Stop) -> usize {
        self.rest.push(stop);
        self.rest.len()
    }
}

/// One cancel's walk over a tree (invariant 11).
struct Walk<'a> {
    /// The token the cancel was called on: the walk's first.
    origin: &'a Arc<TokenState>,
    stops: Stops,
    /// Whether the first token took a cancelled ancestor's stop instead of the one this
    /// cancel gave (invariant 9).
    inherited: bool,
    /// The tokens still to reach: what lay below each token cancelled so far whose turn has
    /// not come, deepest last. The top is held inline and a frame is reached in the list it
    /// was taken out in, so a fan-out or a chain allocates nothing and copies no child.
    frames: Frames,
    /// What is owed, after the first phase, to the first token.
    mine: Option<Owed>,
    /// What is owed, after the first phase, to the tokens this walk cancelled below its first,
    /// in the order it cancelled them.
    owed: Vec<Owed>,
    /// The first tokens of other walks still descending: this cancel returns once they have.
    waits: Vec<Weak<TokenState>>,
    /// The first token of this walk, for the tokens it cancels on its way down to name
    /// (invariant 11); made when the first of them is (a walk over leaves makes none).
    first: Option<Weak<TokenState>>,
    /// Tokens whose last `Arc` this walk let go of in its first phase: freed after it, since
    /// freeing one drops its callbacks (user code).
    freed: Vec<TokenState>,
}

impl Walk<'_> {
    /// Lets go of `node`; if that was its last `Arc`, it is freed after the first phase.
    fn let_go(&mut self, node: Arc<TokenState>) {
        if let Some(state) = Arc::into_inner(node) {
            self.freed.push(state);
        }
    }

    /// Pushes what lies below a token it cancelled with `stop`: its children, reached first
    /// (from the last), then its linked tokens (invariant 8).
    fn push_below(
        &mut self,
        children: Vec<Weak<TokenState>>,
        linked: Vec<Weak<TokenState>>,
        stop: usize,
    ) {
        // Most tokens have no linked token: then there is nothing to collect.
        let linked: Vec<Arc<TokenState>> = if linked.is_empty() {
            Vec::new()
        } else {
            linked
                .into_iter()
                .filter_map(|child| child.upgrade())
                .collect()
        };
        match &mut self.frames.top {
            // The top is done (as at every level of a chain): it takes the new lists in place.
            Some(top) if top.is_done() => {
                top.children = children;
                top.linked = linked;
                top.stop = stop;
            }
            Some(top) => {
                let below = std::mem::replace(
                    top,
                    Frame {
                        children,
                        linked,
                        stop,
                    },
                );
                self.frames.rest.push(below);
            }
            top @ None => {
                *top = Some(Frame {
                    children,
                    linked,
                    stop,
                });
            }
        }
    }

    /// The next token to reach, with its stop: depth first.
    fn next(&mut self) -> Option<(Next, usize)> {
        loop {
            let frame = self.frames.top.as_mut()?;
            if let Some(child) = frame.children.pop() {
                return Some((Next::Child(child), frame.stop));
            }
            if let Some(node) = frame.linked.pop() {
                return Some((Next::Linked(node), frame.stop));
            }
            self.frames.top = self.frames.rest.pop();
        }
    }
}

/// A walk's frames (see [`Walk::frames`]).
#[derive(Default)]
struct Frames {
    top: Option<Frame>,
    rest: Vec<Frame>,
}

/// What lay below one cancelled token, still to reach.
struct Frame {
    /// Its children, in the list it held them in: reached from the last.
    children: Vec<Weak<TokenState>>,
    /// The tokens linked to it (invariant 8), reached after its children.
    linked: Vec<Arc<TokenState>>,
    stop: usize,
}

impl Frame {
    fn is_done(&self) -> bool {
        self.children.is_empty() && self.linked.is_empty()
    }
}

impl TokenState {
    /// Cancels with `reason` and `cause`, and then every descendant: [`Cancel::Won`] for the
    /// call that cancelled this token with what it gave, [`Cancel::Inherited`] for one that
    /// cancelled it with a cancelled ancestor's reason (invariant 9), [`Cancel::Lost`] if it
    /// was cancelled already, or sealed.
    ///
    /// Returns once every descendant reads cancelled, those a concurrent cancel reached first
    /// included (invariant 11). The tree is walked with an explicit stack (invariant 7), in
    /// two phases: first every flag of the subtree (and its waiters woken), with no lock held
    /// across tokens and no wait; then the links cut and the callbacks run, this token's
    /// first, the rest in the order of the walk.
    pub(crate) fn cancel(self: &Arc<Self>, reason: CancelReason, cause: Option<Cause>) -> Cancel {
        // ORDERING: Relaxed: a hint (see `maybe_bare`), on a line no poller writes. A token
        // that may still be bare (a root nothing was attached to, whose token native code
        // may be polling) goes the way of a job's; one that is not (a tree's root, a child)
        // reads its word first, and pays no failed compare-exchange.
        if cause.is_none() && self.maybe_bare.load(Ordering::Relaxed) {
            return self.cancel_likely_bare(reason, cause);
        }
        // ORDERING: Relaxed: a sealed token stays sealed, so seeing SEALED is enough to know
        // this cancel is a no-op. Any other value is decided again, by the compare-exchange of
        // a bare token or under the lock.
        let flag = self.flag.load(Ordering::Relaxed);
        self.cancel_from(flag, reason, cause)
    }

    /// [`cancel`](Self::cancel), for a token that is most likely bare: a job's, cancelled by its
    /// handle, its abort handle or its deadline (a plain job's token stays bare until the job
    /// finishes), or a drop guard's (a `CancelOnDrop`'s own source). With no cause it tries the
    /// bare token's compare-exchange first, on the word a bare token has (`BARE | ROOT`: only a
    /// root starts bare), instead of reading the word before. That read would fetch the line that
    /// the job's closure, polling the token, holds, and the compare-exchange would then take it
    /// back from the closure: two transfers of the line between cores on the way from the cancel to
    /// the closure seeing it, where a bare flag's store makes one. A wrong guess costs a failed
    /// compare-exchange (a few nanoseconds) and gives the word the read would have; that is why
    /// `cancel` tries it only on a token whose `maybe_bare` hint says it may be bare (a tree's root
    /// or a child never is), and the cancels of jobs and guards try it at once: the hint's line may
    /// be in the polling thread's cache too (a job's closure takes its token there).
    pub(crate) fn cancel_likely_bare(
        self: &Arc<Self>,
        reason: CancelReason,
        cause: Option<Cause>,
    ) -> Cancel {
        if cause.is_some() {
            return self.cancel(reason, cause);
        }
        // ORDERING: Release on success, as in `cancel_from`. Relaxed on failure, as
        // `cancel`'s read: the word is decided again there.
        match self.flag.compare_exchange(
            BARE | ROOT,
            CANCELLED | reason_bits(reason) | ROOT,
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => Cancel::Won,
            Err(flag) => self.cancel_from(flag, reason, cause),
        }
    }

    /// The cancel, from `flag`, a recent read of the word.
    fn cancel_from(
        self: &Arc<Self>,
        flag: u32,
        reason: CancelReason,
        cause: Option<Cause>,
    ) -> Cancel {
        if flag & LIFECYCLE == SEALED {
            return Cancel::Lost;
        }
        // A bare token (nothing ever attached: no waiter, no callback, no child, no parent, as a
        // plain job's token) is cancelled by one compare-exchange of its flag, which publishes
        // the reason with the cancelled bit: no lock, nothing else to do. Its seal is the other
        // exit, decided by the same word (invariant 1). A cause needs the lock, as does any
        // token that left BARE meanwhile: decided below, again.
        if flag & LIFECYCLE == BARE && cause.is_none() {
            // ORDERING: Release: a poller's Acquire load that sees the bit sees the reason and
            // everything the canceller did before. A bare token's word holds nothing but its
            // lifecycle and `ROOT`, which stays.
            if self
                .flag
                .compare_exchange(
                    flag,
                    CANCELLED | reason_bits(reason) | (flag & ROOT),
                    Ordering::Release,
                    Ordering::Relaxed,
                )
                .is_ok()
            {
                return Cancel::Won;
            }
        }
        // The reason this call gives, unless a cancelled ancestor decides another (invariant
        // 9, looked for in `cancel_node`); its sequence number is taken there too, once the
        // cancel is decided and only if its walk goes on below this token.
        let mut walk = Walk {
            origin: self,
            stops: Stops {
                first: Stop {
                    reason,
                    cause,
                    sequence: 0,
                },
                rest: Vec::new(),
            },
            inherited: false,
            frames: Frames::default(),
            mine: None,
            owed: Vec::new(),
            waits: Vec::new(),
            first: None,
            freed: Vec::new(),
        };
        let descending = match self.cancel_node(0, Via::Own, &mut walk) {
            Reached::Cancelled { descends } => descends,
            Reached::Descending(first) => {
                // Cancelled by another walk, perhaps still on its way down: it decided; this
                // call returns once every descendant reads cancelled, as that walk's does.
                if waits_for_descents() {
                    match first {
                        Some(first) => {
                            if let Some(first) = first.upgrade() {
                                first.wait_descended();
                            }
                        }
                        None => self.wait_descended(),
                    }
                }
                return Cancel::Lost;
            }
            Reached::Settled => return Cancel::Lost,
        };
        let outcome = if walk.inherited {
            Cancel::Inherited
        } else {
            Cancel::Won
        };
        let mine = walk.mine.take();
        // The first phase: the flags of the whole subtree.
        while let Some((next, stop)) = walk.next() {
            let (node, via) = match next {
                Next::Child(child) => match child.upgrade() {
                    Some(node) => (node, Via::Parent),
                    None => continue,
                },
                Next::Linked(node) => (node, Via::Link),
            };
            match node.cancel_node(stop, via, &mut walk) {
                Reached::Cancelled { .. } => {}
                Reached::Descending(first) => walk
                    .waits
                    .push(first.unwrap_or_else(|| Arc::downgrade(&node))),
                Reached::Settled => {}
            }
            walk.let_go(node);
        }
        if descending {
            self.descended();
        }
        // The second phase: no lock held, user code contained (invariant 5).
        if let Some(mine) = mine {
            self.settle(mine, &walk.stops);
        }
        for owed in std::mem::take(&mut walk.owed) {
            if let Some(node) = owed.node.clone() {
                node.settle(owed, &walk.stops);
            }
        }
        drop(walk.freed);
        if waits_for_descents() {
            for first in walk.waits {
                if let Some(first) = first.upgrade() {
                    first.wait_descended();
                }
            }
        }
        outcome
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

    /// The first phase at one token: sets the flag and the reason, wakes its waiters, and
    /// takes out its children and linked children for the walk and what the second phase
    /// owes it. Takes no other token's lock while it holds its own, and waits for nobody.
    ///
    /// Reached by its own cancel or through a link (`via`), not from its tree parent, it
    /// leaves its parent's children in the second phase (see [`Leave`]): until then a
    /// concurrent cancel from above still finds it, and waits for its descent. The first
    /// token takes the stop of a cancelled ancestor if it has one; a token below it reached
    /// through a link, or with links of its own, has another way up than the walk's, where an
    /// earlier cancel that reached an ancestor first decides its reason (invariant 9).
    fn cancel_node(self: &Arc<Self>, stop: usize, via: Via, walk: &mut Walk<'_>) -> Reached {
        let mut stop = stop;
        let mut looked_up = false;
        let mut checked = false;
        let mut linked = Vec::new();
        let (wakers, sleepers, descends, children, linked, owed, parent) = loop {
            let mut shared = sync::lock(&self.shared);
            let flag = self.flag_under_lock();
            if flag != ACTIVE {
                // Cancelled by another walk: by its first token (`DESCENDING` then says whether
                // it still is on its way down), or on that walk's way down from its first.
                return match shared.descent.clone() {
                    Some(first) => Reached::Descending(Some(first)),
                    // ORDERING: Acquire, as in `wait_descended`: a bit found cleared here ends
                    // the wait, so the clear's Release must show every flag below.
                    None if flag & CANCELLED_BIT != 0
                        && self.flag.load(Ordering::Acquire) & DESCENDING != 0 =>
                    {
                        Reached::Descending(None)
                    }
                    None => Reached::Settled,
                };
            }
            if via == Via::Own
                && shared.parent.is_none()
                && shared.regs.as_ref().is_none_or(|regs| regs.waiters_only())
            {
                // The token the cancel was called on, with no parent and nothing registered but
                // waiters (a server's or a scope's root, most often): no ancestor to look up
                // (a link is a registration), no finished check or callback, nothing owed after
                // the first phase. Decided in one critical section, without the general path's
                // bookkeeping, which costs a fan-out of one child as much as its atomics.
                let wakers = shared
                    .regs
                    .as_mut()
                    .map_or(ToWake::None, |regs| regs.wakers.take());
                let children = std::mem::take(&mut shared.children);
                let descends = !children.is_empty();
                if descends {
                    // As in the general path below: the walk goes on, and the tokens below
                    // compare this cancel's number with their ancestors' (invariant 9).
                    walk.stops.first.sequence = sync::next_sequence();
                }
                let descending = if descends { DESCENDING } else { 0 };
                self.decide(&mut shared, &walk.stops.first, CANCELLED | descending);
                let sleepers = shared.sleepers;
                drop(shared);
                if root_wakes_its_waiters() {
                    self.wake(sleepers, wakers);
                }
                if descends {
                    walk.push_below(children, Vec::new(), stop);
                }
                return Reached::Cancelled { descends };
            }
            if via == Via::Parent
                && shared.children.is_empty()
                && shared.regs.as_ref().is_none_or(|regs| regs.waiters_only())
            {
                // A leaf reached from its tree parent with nothing registered but waiters (most
                // children): no link, finished check or callback, nothing below it and nothing
                // owed after the first phase, so its lock is taken once and the walk goes on.
                let wakers = shared
                    .regs
                    .as_mut()
                    .map_or(ToWake::None, |regs| regs.wakers.take());
                self.decide(&mut shared, walk.stops.get(stop), CANCELLED);
                let parent = shared.parent.take();
                let sleepers = shared.sleepers;
                drop(shared);
                if leaf_wakes_its_waiters() {
                    self.wake(sleepers, wakers);
                }
                if let Some(parent) = parent {
                    walk.let_go(parent);
                }
                return Reached::Settled;
            }
            let links = shared.regs.as_ref().is_some_and(|r| !r.links.is_empty());
            if !looked_up && via == Via::Own {
                // An ancestor cancelled already (its walk has not reached this token yet)
                // decides the reason: the cancel from above came first. So a job whose handle
                // is dropped because its request's deadline passed reads `Timeout`, not
                // `Dropped`, however the threads interleave, through a tree parent or a link.
                // A token whose only way up is a parent that is a root (`ROOT`) and not
                // cancelled has none, which one load of the parent's word tells, under this
                // lock: the common child of a server's or a request's token decides in this one
                // critical section.
                let clear = !links
                    && shared
                        .parent
                        .as_ref()
                        .is_none_or(|parent| parent.is_uncancelled_root());
                looked_up = true;
                if !clear {
                    // Each lock is taken alone: this one is released before the ancestors'.
                    drop(shared);
                    if let Some(earlier) = self.earliest_cancelled_ancestor() {
                        walk.stops.first = earlier;
                        walk.inherited = true;
                    }
                    continue;
                }
            }
            if !looked_up && (via == Via::Link || links) {
                // Each lock is taken alone: this one is released before the ancestors'.
                drop(shared);
                looked_up = true;
                let current = walk.stops.get(stop).sequence;
                if let Some(earlier) = self
                    .earliest_cancelled_ancestor()
                    .filter(|earlier| sync::sequence_before(earlier.sequence, current))
                {
                    stop = walk.stops.push(earlier);
                }
                continue;
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
                    return Reached::Settled;
                }
                continue;
            }
            // Most tokens have no waiter: then there is no registry to take out and drain,
            // which would cost about as much as the rest of a child's cancel.
            let (wakers, callbacks, links, finished) = match shared.regs.as_mut() {
                Some(regs) => {
                    let wakers = regs.wakers.take();
                    // The links to tokens linked to this one are the walk's own, not user
                    // code: followed in the first phase (invariant 11).
                    if !regs.callbacks.is_empty() {
                        regs.callbacks.take_where(
                            |callback| matches!(callback, Callback::Link(_)),
                            |callback| {
                                if let Callback::Link(child) = callback {
                                    linked.push(child);
                                }
                            },
                        );
                    }
                    let links = std::mem::take(&mut regs.links);
                    // Decided: the check (invariant 10) is of no more use, and may hold a
                    // descriptor. Dropped with the links, in the second phase.
                    let finished = regs.finished.take();
                    (wakers, !regs.callbacks.is_empty(), links, finished)
                }
                None => (ToWake::None, false, Vec::new(), None),
            };
            let children = std::mem::take(&mut shared.children);
            // Whether the walk goes on below this token.
            let descends = !children.is_empty() || !linked.is_empty();
            // Invariant 11: a token below the walk's first names that first; the first carries
            // the bit, until the walk has reached all its descendants.
            let descending = if !descends {
                0
            } else if via == Via::Own {
                DESCENDING
            } else {
                let origin = walk.origin;
                let first = walk.first.get_or_insert_with(|| Arc::downgrade(origin));
                shared.descent = Some(first.clone());
                0
            };
            if via == Via::Own && !walk.inherited && descends {
                // The walk goes on below: its tokens' own ways up compare this cancel's number
                // with their ancestors' (invariant 9). A cancel that reaches no other token
                // needs none (nothing below it can ever read its number), and leaves 0, as a
                // bare token's lock-free cancel does.
                walk.stops.first.sequence = sync::next_sequence();
            }
            let flag = if callbacks { CANCELLING } else { CANCELLED };
            self.decide(&mut shared, walk.stops.get(stop), flag | descending);
            // A cancelled token needs no parent (invariant 7). Cancelled from its parent, it
            // was taken out of the parent's list already, so nobody else touches its links.
            // (Its stale `slot` is never read again: a token without a parent unlinks nowhere.)
            // A root never gains a parent, so one without a link has nothing to leave.
            let (leave, parent) = match (via, shared.parent.take()) {
                (_, None) => (Leave::Nothing, None),
                (Via::Parent, parent) => (Leave::Nothing, parent),
                // Nothing below it: no descendant looks up through its link to the parent,
                // which it cuts now; its entry in the parent's list stays until the second
                // phase (a sibling's move still tells it its index there).
                (Via::Own | Via::Link, Some(parent)) if !descends => (Leave::List(parent), None),
                (Via::Own | Via::Link, Some(parent)) => {
                    let kept = shared.parent.insert(parent).clone();
                    (Leave::Parent(kept), None)
                }
            };
            let owed =
                (callbacks || leave.owed() || !links.is_empty() || finished.is_some()).then(|| {
                    Owed {
                        node: None,
                        stop,
                        leave,
                        links,
                        finished,
                        callbacks,
                    }
                });
            break (
                wakers,
                shared.sleepers,
                descends,
                children,
                std::mem::take(&mut linked),
                owed,
                parent,
            );
        };
        self.wake(sleepers, wakers);
        // Possibly the parent's last `Arc`: freed after the first phase.
        if let Some(parent) = parent {
            walk.let_go(parent);
        }
        if let Some(mut owed) = owed {
            if via == Via::Own {
                walk.mine = Some(owed);
            } else {
                owed.node = Some(self.clone());
                walk.owed.push(owed);
            }
        }
        if descends {
            walk.push_below(children, linked, stop);
        }
        Reached::Cancelled { descends }
    }

    /// Under the lock (`shared`), decides the cancel of this token (invariant 1): the cause and
    /// the sequence of `given`, then `flag` with its reason.
    fn decide(&self, shared: &mut Shared, given: &Stop, flag: u32) {
        shared.cause.clone_from(&given.cause);
        shared.sequence = given.sequence;
        // ORDERING: Release publishes the reason (and the canceller's earlier writes) to
        // `is_cancelled`'s Acquire load. The store happens under the lock (invariant 1), and
        // keeps `ROOT`, which never changes.
        self.flag.store(
            flag | reason_bits(given.reason) | self.fixed_bits(),
            Ordering::Release,
        );
    }

    /// With the lock released: wakes the threads sleeping on this token, if any (invariant
    /// 6), and the futures waiting on it.
    fn wake(&self, sleepers: u32, wakers: ToWake) {
        if sleepers > 0 {
            self.changed.notify_all();
        }
        // A waker is the executor's code, which only schedules its task: woken at once, and
        // contained like ours.
        wakers.for_each(|waker| {
            run_contained(|| waker.wake());
        });
    }

    /// The walk's first phase reached every descendant of this token it had to: a cancel
    /// waiting for that returns (invariant 11).
    fn descended(&self) {
        // ORDERING: Release: everything the walk did below this token (every descendant's
        // flag store) happens before a waiter's Acquire read of the cleared bit.
        let was = self
            .flag
            .fetch_and(!(DESCENDING | DESCENT_AWAITED), Ordering::Release);
        if was & DESCENT_AWAITED != 0 {
            // A waiter marked the bit under the lock and sleeps until notified: taking the
            // lock here orders this notify after its wait began.
            drop(sync::lock(&self.shared));
            self.changed.notify_all();
        }
    }

    /// Blocks until the walk that cancelled this token has reached all its descendants. That
    /// walk is in its first phase, which waits for nobody, so this returns soon.
    fn wait_descended(&self) {
        // ORDERING: Acquire, as below: a cleared bit shows every descendant's flag.
        if self.flag.load(Ordering::Acquire) & DESCENDING == 0 {
            return;
        }
        let mut shared = sync::lock(&self.shared);
        loop {
            // ORDERING: AcqRel: the read pairs with `descended`'s Release; the mark is one
            // read-modify-write of the word that `descended` clears, so exactly one of the two
            // sees the other's.
            let was = self.flag.fetch_or(DESCENT_AWAITED, Ordering::AcqRel);
            if was & DESCENDING == 0 {
                return;
            }
            shared = self.sleep(shared, None);
        }
    }

    /// The second phase at one token: it leaves its parents, then its callbacks run.
    fn settle(&self, owed: Owed, stops: &Stops) {
        match owed.leave {
            Leave::Nothing => {}
            Leave::List(parent) => self.leave_list(parent),
            Leave::Parent(parent) => self.leave_parent(Some(parent)),
        }
        // A cancelled token needs no linked parent either (invariant 8).
        Link::release_all(owed.links);
        drop_contained(owed.finished);
        if owed.callbacks {
            let stop = stops.get(owed.stop);
            self.run_callbacks(stop.reason, stop.cause.as_ref());
        }
    }

    /// Seals the token: from now on it can never be cancelled. `false` if it was cancelled
    /// first (then the cancel stands). Callbacks and wakers still registered are dropped: they
    /// can never run.
    pub(crate) fn seal(&self) -> bool {
        // ORDERING: Release, as the store below; a failure (the token is not bare) is looked
        // at again under the lock, which orders it.
        // A bare token is a root (`ROOT`): nothing but a root starts bare.
        if self
            .flag
            .compare_exchange(
                BARE | ROOT,
                SEALED | ROOT,
                Ordering::Release,
                Ordering::Relaxed,
            )
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
            self.flag
                .store(SEALED | self.fixed_bits(), Ordering::Release);
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
            self.leave_parent(None);
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
    /// run. A callback registered meanwhile joins the end of the line (invariant 2): a link
    /// among them (a token linked while this one was cancelling) cancels its token then.
    ///
    /// One critical section per callback both retires the one that just returned and takes out
    /// the next: a guard waiting for the former then sees another key running (or none) and
    /// returns.
    fn run_callbacks(&self, reason: CancelReason, cause: Option<&Cause>) {
        let me = thread::current().id();
        loop {
            let (callback, sleepers) = {
                let mut shared = sync::lock(&self.shared);
                let sleepers = shared.sleepers;
                let regs = shared.regs();
                let callback = regs.callbacks.pop_first();
                regs.running = callback.as_ref().map(|(key, _)| (*key, me));
                if callback.is_none() {
                    // CANCELLING to CANCELLED, the reason and the other bits kept. ORDERING:
                    // Release, as every store of the flag; the cancelled bit was published by
                    // the cancel's store already, so readers outside the lock see no change.
                    // Under the lock (invariant 4).
                    self.flag
                        .fetch_and(!(CANCELLING & !CANCELLED), Ordering::Release);
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
            if run_contained(|| callback.call(reason, cause)).is_none() {
                stats::callback_panicked();
            }
        }
    }
}

/// Whether a cancel that reaches a token another walk is still descending from waits for that
/// walk (invariant 11). Always, but in a loom build whose negative control puts back the old
/// path, where it returned at once, before every descendant read cancelled.
fn waits_for_descents() -> bool {
    #[cfg(tethered_loom)]
    if crate::fault::put_back("cancel_returns_before_descendants") {
        return false;
    }
    true
}

/// Whether a token with no parent, cancelled by its own cancel with nothing registered but
/// waiters, wakes them. Always, but in a loom build with the fault
/// `root_cancel_forgets_its_waiters` put back (the negative control of
/// `a_roots_and_its_childs_waiters_never_miss_the_roots_cancel`).
fn root_wakes_its_waiters() -> bool {
    #[cfg(tethered_loom)]
    if crate::fault::put_back("root_cancel_forgets_its_waiters") {
        return false;
    }
    true
}

/// Whether a leaf cancelled from its parent wakes its waiters. Always, but in a loom build
/// whose negative control leaves them out of the leaf's one critical section, as a leaf path
/// that forgot them would: the model of a child's waiter then deadlocks.
fn leaf_wakes_its_waiters() -> bool {
    #[cfg(tethered_loom)]
    if crate::fault::put_back("leaf_cancel_forgets_its_waiters") {
        return false;
    }
    true
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
