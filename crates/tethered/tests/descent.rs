//! `cancel` returns only once every descendant reads cancelled, also when another thread
//! cancels a token in between at the same moment (tokio-util's promise for its token, which a
//! port of its test suite found this crate's token lacked: 11 leaves of 512 still read
//! `false` after the root's `cancel` returned, in 4 rounds of 300).

use std::sync::{Arc, Barrier};

use tethered::{CancelReason, CancelSource};

/// A root, a middle token, and `width` leaves under the middle (each with a child of its
/// own, so the walk below the middle takes a while).
fn tree(width: usize) -> (CancelSource, CancelSource, Vec<CancelSource>) {
    let root = CancelSource::new();
    let middle = root.child();
    let mut leaves = Vec::with_capacity(2 * width);
    for _ in 0..width {
        let leaf = middle.child();
        leaves.push(leaf.child());
        leaves.push(leaf);
    }
    (root, middle, leaves)
}

fn uncancelled(leaves: &[CancelSource]) -> usize {
    leaves.iter().filter(|leaf| !leaf.is_cancelled()).count()
}

#[test]
fn a_roots_cancel_racing_a_middle_cancel_returns_with_every_leaf_cancelled() {
    for round in 0..300 {
        let (root, middle, leaves) = tree(256);
        let leaves = Arc::new(leaves);
        let start = Arc::new(Barrier::new(2));
        let other = {
            let (middle, leaves, start) = (middle.clone(), leaves.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                middle.cancel(CancelReason::Requested);
                uncancelled(&leaves)
            })
        };
        start.wait();
        root.cancel(CancelReason::Shutdown);
        let after_root = uncancelled(&leaves);
        let after_middle = other.join().unwrap();
        assert_eq!(
            (after_root, after_middle),
            (0, 0),
            "round {round}: leaves still uncancelled after the root's and the middle's cancel \
             returned"
        );
    }
}

#[test]
fn a_cancel_of_a_token_being_cancelled_returns_once_its_descendants_are() {
    // The second `cancel` of the middle loses (it was cancelled already), but returns only
    // once the first one's walk reached every leaf.
    for round in 0..300 {
        let (_root, middle, leaves) = tree(256);
        let leaves = Arc::new(leaves);
        let start = Arc::new(Barrier::new(2));
        let other = {
            let (middle, leaves, start) = (middle.clone(), leaves.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                let won = middle.cancel(CancelReason::Requested);
                (won, uncancelled(&leaves))
            })
        };
        start.wait();
        let won = middle.cancel(CancelReason::Timeout);
        let mine = uncancelled(&leaves);
        let (theirs_won, theirs) = other.join().unwrap();
        assert!(
            won != theirs_won,
            "round {round}: exactly one cancel decides"
        );
        assert_eq!((mine, theirs), (0, 0), "round {round}");
    }
}

#[test]
fn a_callback_that_cancels_its_own_tree_does_not_wait_for_itself() {
    // A callback on a leaf cancels the root and the middle again while the root's cancel runs
    // the callbacks: every flag is set by then, so nothing waits, and nothing deadlocks.
    let (root, middle, leaves) = tree(8);
    let (again_root, again_middle) = (root.clone(), middle.clone());
    let guard = leaves[0].token().on_cancel(move |_| {
        assert!(!again_root.cancel(CancelReason::Requested));
        assert!(!again_middle.cancel(CancelReason::Requested));
    });
    assert!(root.cancel(CancelReason::Shutdown));
    assert_eq!(uncancelled(&leaves), 0);
    drop(guard);
}
