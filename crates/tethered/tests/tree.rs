//! The token tree is stack-safe: cancel and drop walk it with loops, so a chain of a million
//! levels cancels and drops on a default 2 MiB thread, and the links clean up after themselves.
//! A level whose handles all went is spliced out, and the cancel still reaches what was below.

use std::thread;

use tethered::{CancelReason, CancelSource, CancelToken};

const LEVELS: usize = 1_000_000;

/// Runs `f` on a thread with the default 2 MiB stack (the test harness's threads may differ).
fn on_default_stack(f: impl FnOnce() + Send + 'static) {
    thread::Builder::new()
        .stack_size(2 * 1024 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .expect("the thread did not overflow its stack");
}

/// A chain of `LEVELS` children below `root`, each level held (so none is spliced out).
fn chain(root: &CancelSource) -> Vec<CancelSource> {
    let mut levels = Vec::with_capacity(LEVELS);
    let mut leaf = root.clone();
    for _ in 0..LEVELS {
        leaf = leaf.child();
        levels.push(leaf.clone());
    }
    levels
}

#[test]
fn a_million_level_chain_cancels_on_a_default_stack() {
    on_default_stack(|| {
        let root = CancelSource::new();
        let levels = chain(&root);
        assert!(root.cancel(CancelReason::Shutdown));
        assert_eq!(
            levels[LEVELS - 1].token().reason(),
            Some(CancelReason::Shutdown)
        );
        drop(levels);
    });
}

#[test]
fn a_million_level_chain_comes_apart_from_either_end_without_a_cancel() {
    on_default_stack(|| {
        let root = CancelSource::new();
        let levels = chain(&root);
        let leaf = levels[LEVELS - 1].token();
        drop(levels); // root side first: each level is spliced out as its handle goes
        assert_eq!(
            root.token().registrations(),
            1,
            "the leaf hangs off the root"
        );
        root.cancel(CancelReason::Timeout);
        assert_eq!(leaf.reason(), Some(CancelReason::Timeout));

        let root = CancelSource::new();
        let mut levels = chain(&root);
        while let Some(level) = levels.pop() {
            drop(level); // leaf side first
        }
        assert_eq!(root.token().registrations(), 0, "the chain unlinked itself");
    });
}

/// A level with a callback registered is not spliced out when its handles go (a cancel from
/// above must still run it), so such a chain is held together by its leaf alone; dropping the
/// leaf releases every level in a loop.
#[test]
fn a_million_level_chain_held_by_its_leaf_drops_on_a_default_stack() {
    on_default_stack(|| {
        let root = CancelSource::new();
        let mut leaf = root.token();
        for _ in 0..LEVELS {
            leaf = leaf.child().token();
            leaf.on_cancel(|_| {}).detach();
        }
        assert_eq!(
            root.token().registrations(),
            1,
            "one child linked to the root"
        );
        drop(leaf); // the last handle of every level below the root
        assert_eq!(root.token().registrations(), 0, "the chain unlinked itself");
    });
}

/// Threads make and drop children, grandchildren and levels in between while others cancel
/// subtrees; then the root's cancel must reach every token still held, and the root must end
/// with no link left.
#[test]
fn splicing_under_concurrent_churn_loses_no_child() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 2_000;
    let root = CancelSource::new();
    let kept: Vec<Vec<CancelToken>> = thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let root = &root;
                s.spawn(move || {
                    let mut kept = Vec::new();
                    let mut middle = root.child();
                    for round in 0..ROUNDS {
                        let grandchild = middle.child();
                        let great = grandchild.child();
                        match (round + t) % 4 {
                            // The middle level goes: its children move up to the root.
                            0 => middle = root.child(),
                            // A subtree is cancelled by its own source.
                            1 => {
                                grandchild.cancel(CancelReason::Requested);
                            }
                            // The grandchild goes first, its child stays.
                            2 => drop(grandchild),
                            _ => {}
                        }
                        if round % 7 == 0 {
                            kept.push(great.token());
                        }
                    }
                    kept
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    root.cancel(CancelReason::Shutdown);
    for token in kept.iter().flatten() {
        let reason = token.reason();
        assert!(
            matches!(
                reason,
                Some(CancelReason::Shutdown) | Some(CancelReason::Requested)
            ),
            "a kept token was not cancelled: {reason:?}"
        );
    }
    assert!(
        kept.iter()
            .flatten()
            .any(|t| t.reason() == Some(CancelReason::Shutdown))
    );
    drop(kept);
    assert_eq!(root.token().registrations(), 0);
}

#[test]
fn a_parent_does_not_grow_with_dead_children() {
    let parent = CancelSource::new();
    let keep: Vec<_> = (0..100).map(|_| parent.child()).collect();
    for _ in 0..10_000 {
        drop(parent.child());
    }
    assert_eq!(parent.token().registrations(), 100);
    // Dropping them in any order keeps the bookkeeping right.
    for (i, child) in keep.into_iter().enumerate() {
        if i % 3 == 0 {
            child.cancel(CancelReason::Requested);
        }
        drop(child);
    }
    assert_eq!(parent.token().registrations(), 0);
}

#[test]
fn wide_fan_out_reaches_every_child_and_grandchild() {
    let root = CancelSource::new();
    let children: Vec<_> = (0..1_000).map(|_| root.child()).collect();
    let grandchildren: Vec<_> = children.iter().map(|c| c.child()).collect();
    // Some go away before the cancel.
    drop(children);
    root.cancel(CancelReason::Timeout);
    for grandchild in &grandchildren {
        assert_eq!(grandchild.token().reason(), Some(CancelReason::Timeout));
    }
}

/// Every flag of the subtree is set before any callback runs, and a parent's callbacks run
/// before its children's.
#[test]
fn a_parents_callbacks_find_its_children_cancelled_and_run_before_theirs() {
    let root = CancelSource::new();
    let child = root.child();
    let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let (seen, probe) = (order.clone(), child.token());
    root.token()
        .on_cancel(move |_| seen.lock().unwrap().push(("root", probe.is_cancelled())))
        .detach();
    let (seen, probe) = (order.clone(), root.token());
    child
        .token()
        .on_cancel(move |_| seen.lock().unwrap().push(("child", probe.is_cancelled())))
        .detach();
    root.cancel(CancelReason::Requested);
    assert_eq!(*order.lock().unwrap(), [("root", true), ("child", true)]);
}

/// A root's callback drops the last handle of the level below it while the cancel is under
/// way: that level is not spliced into a cancelled parent, and the leaf below it is cancelled.
#[test]
fn a_callback_dropping_a_middle_level_during_the_cancel_loses_no_leaf() {
    let root = CancelSource::new();
    let middle = std::sync::Mutex::new(Some(root.child()));
    let leaf = middle.lock().unwrap().as_ref().unwrap().child();
    let holder = std::sync::Arc::new(middle);
    let dropper = holder.clone();
    root.token()
        .on_cancel(move |_| drop(dropper.lock().unwrap().take()))
        .detach();
    assert!(root.cancel(CancelReason::Shutdown));
    assert!(holder.lock().unwrap().is_none(), "the callback ran");
    assert_eq!(leaf.token().reason(), Some(CancelReason::Shutdown));
    assert_eq!(root.token().registrations(), 0);
}

/// A callback of a middle level, run by the root's cancel, makes a child of that level (it
/// starts cancelled) and drops a handle of the leaf: nothing deadlocks, and every token ends
/// cancelled with the root's reason.
#[test]
fn a_callback_that_makes_and_drops_tokens_during_the_walk_does_not_deadlock() {
    let root = CancelSource::new();
    let middle = root.child();
    let leaf = middle.child();
    let spare = leaf.clone();
    let made = std::sync::Arc::new(std::sync::Mutex::new(None));
    let keep = made.clone();
    let parent = middle.token();
    middle
        .token()
        .on_cancel(move |_| {
            drop(spare);
            *keep.lock().unwrap() = Some(parent.child());
        })
        .detach();
    drop(middle);
    root.cancel(CancelReason::Timeout);
    assert_eq!(leaf.token().reason(), Some(CancelReason::Timeout));
    let late = made.lock().unwrap().take().expect("the callback ran");
    assert_eq!(late.token().reason(), Some(CancelReason::Timeout));
}

/// A detached callback lives as long as its token: a level with a child below it stays for
/// its callback, which the root's cancel runs; a token with neither handles nor children is
/// freed at once, and its callback dropped unrun.
#[test]
fn a_detached_callback_lives_as_long_as_its_token() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    struct SetOnDrop(Arc<AtomicBool>);
    impl Drop for SetOnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    let root = CancelSource::new();
    let kept_ran = Arc::new(AtomicBool::new(false));
    let middle = root.child();
    let flag = kept_ran.clone();
    middle
        .token()
        .on_cancel(move |_| flag.store(true, Ordering::SeqCst))
        .detach();
    let leaf = middle.child();
    drop(middle);

    let lone_ran = Arc::new(AtomicBool::new(false));
    let lone_dropped = Arc::new(AtomicBool::new(false));
    let lone = root.child();
    let (flag, witness) = (lone_ran.clone(), SetOnDrop(lone_dropped.clone()));
    lone.token()
        .on_cancel(move |_| {
            let _witness = &witness;
            flag.store(true, Ordering::SeqCst);
        })
        .detach();
    drop(lone);
    assert!(lone_dropped.load(Ordering::SeqCst), "freed with its token");

    root.cancel(CancelReason::Shutdown);
    assert!(
        kept_ran.load(Ordering::SeqCst),
        "the level stayed and its callback ran"
    );
    assert!(!lone_ran.load(Ordering::SeqCst));
    assert_eq!(leaf.token().reason(), Some(CancelReason::Shutdown));
}

/// A level kept for its callback is freed by its last child's drop, which then unlinks it
/// from its parent by address. Meanwhile siblings come and go in the same parent: their
/// unlinks purge dead entries (which frees a dead level's memory) and new children may be
/// allocated at a freed level's address, even in its old slot. No live child's entry is ever
/// taken for a dead one's: every kept child is still reached by the parent's cancel, and the
/// parent's list ends with exactly the kept children in it.
#[test]
fn a_freed_level_never_unlinks_a_live_sibling_at_its_old_address() {
    const THREADS: usize = 4;
    const ROUNDS: usize = 50_000;
    let root = CancelSource::new();
    let kept: Vec<Vec<CancelSource>> = thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let root = &root;
                s.spawn(move || {
                    let mut kept = Vec::new();
                    for round in 0..ROUNDS {
                        if (round + t) % 2 == 0 {
                            // A level with a detached callback is not spliced out: its leaf's
                            // drop frees it and unlinks it from the root.
                            let level = root.child();
                            level.token().on_cancel(|_| {}).detach();
                            let leaf = level.child();
                            drop(level);
                            drop(leaf);
                        } else {
                            let sibling = root.child();
                            if round % 5 == 0 {
                                kept.push(sibling);
                            }
                        }
                    }
                    kept
                })
            })
            .collect();
        workers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let live = kept.iter().map(Vec::len).sum::<usize>();
    assert_eq!(
        root.token().registrations(),
        live,
        "the root's list holds exactly the kept children"
    );
    root.cancel(CancelReason::Shutdown);
    for child in kept.iter().flatten() {
        assert_eq!(child.token().reason(), Some(CancelReason::Shutdown));
    }
}
