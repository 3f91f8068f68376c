//! The token tree is stack-safe: cancel and drop walk it with loops, so a chain of a million
//! levels cancels and drops on a default 2 MiB thread, and the links clean up after themselves.

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

fn chain(root: &CancelSource) -> CancelToken {
    let mut leaf = root.token();
    for _ in 0..LEVELS {
        leaf = leaf.child().token();
    }
    leaf
}

#[test]
fn a_million_level_chain_cancels_on_a_default_stack() {
    on_default_stack(|| {
        let root = CancelSource::new();
        let leaf = chain(&root);
        assert!(root.cancel(CancelReason::Shutdown));
        assert_eq!(leaf.reason(), Some(CancelReason::Shutdown));
        drop(leaf);
    });
}

#[test]
fn a_million_level_chain_drops_on_a_default_stack_without_a_cancel() {
    on_default_stack(|| {
        let root = CancelSource::new();
        let leaf = chain(&root);
        assert_eq!(
            root.token().registrations(),
            1,
            "one child linked to the root"
        );
        drop(leaf); // the last handle of every level below the root
        assert_eq!(root.token().registrations(), 0, "the chain unlinked itself");
    });
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

#[test]
fn a_parents_callbacks_run_before_its_children_are_cancelled() {
    let root = CancelSource::new();
    let child = root.child();
    let probe = child.token();
    let saw = std::sync::Arc::new(std::sync::Mutex::new(None));
    let seen = saw.clone();
    root.token()
        .on_cancel(move |_| *seen.lock().unwrap() = Some(probe.is_cancelled()))
        .detach();
    root.cancel(CancelReason::Requested);
    assert_eq!(*saw.lock().unwrap(), Some(false));
    assert!(child.is_cancelled());
}
