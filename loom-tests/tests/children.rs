//! Model 5: child sources against parent cancel, child cancel and child drop.

use loom_tests::{model, thread};
use tethered::{CancelReason, CancelSource};

/// Parent cancel, child cancel and child drop race: no deadlock, the child ends up with one of
/// the two reasons, and the parent's link list ends empty.
#[test]
fn parent_cancel_vs_child_cancel_vs_child_drop() {
    model("child_parent_cancel_vs_child_cancel_vs_drop", || {
        let parent = CancelSource::new();
        let child = parent.token().child();
        let child_token = child.token();
        let parent_canceller = {
            let parent = parent.clone();
            thread::spawn(move || {
                parent.cancel(CancelReason::Shutdown);
            })
        };
        let child_canceller = thread::spawn(move || {
            child.cancel(CancelReason::Requested);
            drop(child);
        });
        let seen = child_token.reason();
        drop(child_token);
        parent_canceller.join().unwrap();
        child_canceller.join().unwrap();
        assert!(matches!(
            seen,
            None | Some(CancelReason::Shutdown) | Some(CancelReason::Requested)
        ));
        assert_eq!(parent.token().registrations(), 0);
        assert!(parent.is_cancelled());
    });
}

/// The last handle of a child dropped while the parent's cancel is delivering to it.
#[test]
fn child_drop_during_parent_cancel_unlinks() {
    model("child_drop_vs_parent_cancel", || {
        let parent = CancelSource::new();
        let child = parent.token().child();
        let canceller = {
            let parent = parent.clone();
            thread::spawn(move || {
                parent.cancel(CancelReason::Timeout);
            })
        };
        drop(child);
        canceller.join().unwrap();
        assert_eq!(parent.token().registrations(), 0);
    });
}

/// One child's last handle goes (its unlink moves the other child into its slot) while the
/// other cancels itself and leaves: the slot the leaving child reads is the one the parent's
/// list holds it at, so the parent ends with no link (a stale slot would leave one behind).
#[test]
fn sibling_unlink_vs_sibling_cancel() {
    model("sibling_unlink_vs_sibling_cancel", || {
        let parent = CancelSource::new();
        let first = parent.child();
        let second = parent.child();
        let dropper = thread::spawn(move || drop(first));
        let leaver = thread::spawn(move || {
            second.cancel(CancelReason::Requested);
        });
        dropper.join().unwrap();
        leaver.join().unwrap();
        assert_eq!(parent.token().registrations(), 0);
    });
}

/// A cancel of the root racing a cancel of the middle of a chain: each returns only once the
/// leaf reads cancelled. The root's walk may find the middle cancelled by the other thread,
/// whose walk has not reached the leaf yet: it waits for that descent, as tokio-util's token
/// does by holding the middle's lock through it.
#[test]
fn root_cancel_vs_middle_cancel_return_with_every_descendant_cancelled() {
    model("root_cancel_vs_middle_cancel", || {
        let root = CancelSource::new();
        let middle = root.child();
        let leaf = middle.child();
        let middle_canceller = {
            let (middle, leaf) = (middle.clone(), leaf.token());
            thread::spawn(move || {
                middle.cancel(CancelReason::Requested);
                assert!(
                    leaf.is_cancelled(),
                    "the middle's cancel returned before the leaf read cancelled"
                );
            })
        };
        root.cancel(CancelReason::Shutdown);
        assert!(
            leaf.is_cancelled(),
            "the root's cancel returned before the leaf read cancelled"
        );
        middle_canceller.join().unwrap();
        assert!(matches!(
            leaf.token().reason(),
            Some(CancelReason::Shutdown | CancelReason::Requested)
        ));
        assert_eq!(root.token().registrations(), 0);
        assert_eq!(middle.token().registrations(), 0);
    });
}

/// The negative control: with the wait for another walk's descent put back to what it was
/// (none), the root's cancel returns before the leaf reads cancelled.
#[cfg(tethered_loom)]
#[test]
fn negative_control_a_cancel_that_returns_before_its_descendants_is_caught() {
    loom_tests::fails_with_fault(
        "root_cancel_vs_middle_cancel_return_with_every_descendant_cancelled",
        "cancel_returns_before_descendants",
        "returned before the leaf read cancelled",
    );
}

/// A child's own cancel against its root's: a child that reads the root cancelled before its
/// own cancel takes the root's reason (the cancel from above came first), though its cancel
/// decides in one critical section when its parent is a root that is not cancelled.
#[test]
fn a_childs_cancel_after_its_roots_reads_the_roots_reason() {
    model("child_cancel_after_root_cancel", || {
        let root = CancelSource::new();
        let child = root.child();
        let root_token = root.token();
        let canceller = thread::spawn(move || {
            root.cancel(CancelReason::Shutdown);
        });
        // Lets the root's cancel begin first: loom otherwise runs this thread on to its own
        // cancel in every interleaving it explores here.
        thread::yield_now();
        let saw_root = root_token.is_cancelled();
        child.cancel(CancelReason::Requested);
        let reason = child.token().reason();
        if saw_root {
            assert_eq!(
                reason,
                Some(CancelReason::Shutdown),
                "the child read its own reason after its root was cancelled"
            );
        }
        assert!(matches!(
            reason,
            Some(CancelReason::Shutdown | CancelReason::Requested)
        ));
        canceller.join().unwrap();
        drop(child);
        assert_eq!(root_token.registrations(), 0);
    });
}

/// The negative control: with the child's look at its root's word put back to one that sees
/// only that it is a root, the child decides its own reason after its root was cancelled.
#[cfg(tethered_loom)]
#[test]
fn negative_control_a_child_that_ignores_its_cancelled_root_is_caught() {
    loom_tests::fails_with_fault(
        "a_childs_cancel_after_its_roots_reads_the_roots_reason",
        "child_cancel_ignores_a_cancelled_root",
        "read its own reason after its root was cancelled",
    );
}

/// Two siblings cancel themselves at once. Each leaves its parent's list in its cancel's own
/// critical section if the parent's lock is free, or in the second phase if not; the one moved
/// into the other's gap is told its new index under the parent's lock while it may be holding
/// its own. The parent ends with no child, whichever left first and however.
#[test]
fn two_siblings_cancelled_at_once_both_leave() {
    model("two_siblings_cancelled_at_once", || {
        let parent = CancelSource::new();
        let first = parent.child();
        let second = parent.child();
        let other = thread::spawn(move || {
            first.cancel(CancelReason::Requested);
            first
        });
        second.cancel(CancelReason::Timeout);
        let first = other.join().unwrap();
        assert_eq!(
            parent.token().registrations(),
            0,
            "a sibling left an entry behind"
        );
        assert!(first.is_cancelled() && second.is_cancelled());
        assert!(!parent.is_cancelled());
    });
}

/// The negative control: with a moved sibling's index left stale, the model above finds the
/// entry left behind.
#[cfg(tethered_loom)]
#[test]
fn negative_control_a_stale_index_after_a_move_is_caught() {
    loom_tests::fails_with_fault(
        "two_siblings_cancelled_at_once_both_leave",
        "moved_sibling_keeps_its_old_slot",
        "a sibling left an entry behind",
    );
}
