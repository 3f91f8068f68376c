//! Tokens with several parents (`CancelSource::any_of`, a job `child_of` more than one token),
//! linked by a callback on each parent, and the rule that a `cancel`'s return value and the
//! reason the token reads always agree.

use loom_tests::{model, sync::Arc, thread};
use tethered::{CancelReason, CancelSource, Cause};

/// Two parents cancelled at once: the child reads exactly one of their reasons, with that
/// parent's own cause beside it, whoever came first.
#[test]
fn any_of_two_parents_cancelled_at_once_reads_one_of_them_whole() {
    model("any_of_two_cancels", || {
        let first = CancelSource::new();
        let second = CancelSource::new();
        let child = CancelSource::any_of([&first.token(), &second.token()]);
        let timeout_cause = Cause::msg("deadline");
        let shutdown_cause = Cause::msg("server stopping");
        let other = {
            let second = second.clone();
            let cause = shutdown_cause.clone();
            thread::spawn(move || {
                second.cancel_with_cause(CancelReason::Shutdown, cause);
            })
        };
        first.cancel_with_cause(CancelReason::Timeout, timeout_cause.clone());
        other.join().unwrap();
        let token = child.token();
        let cause = token.cause().expect("the child took its parent's cause");
        match token.reason() {
            Some(CancelReason::Timeout) => assert!(cause.ptr_eq(&timeout_cause)),
            Some(CancelReason::Shutdown) => assert!(cause.ptr_eq(&shutdown_cause)),
            other => panic!("the child reads {other:?}"),
        }
    });
}

/// A child of two parents dropped while a parent is cancelled: nothing panics, and nothing
/// the link allocated outlives the model (loom reports a leaked `Arc`).
#[test]
fn any_of_child_dropped_while_a_parent_cancels() {
    model("any_of_drop_vs_cancel", || {
        let first = CancelSource::new();
        let second = CancelSource::new();
        let child = CancelSource::any_of([&first.token(), &second.token()]);
        let canceller = {
            let first = first.clone();
            thread::spawn(move || {
                first.cancel(CancelReason::Dropped);
            })
        };
        drop(child);
        canceller.join().unwrap();
        assert!(
            !second.is_cancelled(),
            "a child's link cancelled its other parent"
        );
    });
}

/// A parent and its child cancelled at once, from two threads: the child's `cancel` returns
/// `true` exactly when the child reads the reason that call gave, never while it reads the
/// parent's.
#[test]
fn a_cancel_returns_true_only_when_its_reason_is_the_one_read() {
    model("cancel_return_vs_parent", || {
        let parent = Arc::new(CancelSource::new());
        let child = parent.child();
        let from_above = {
            let parent = parent.clone();
            thread::spawn(move || {
                parent.cancel(CancelReason::Shutdown);
            })
        };
        let won = child.cancel(CancelReason::Timeout);
        from_above.join().unwrap();
        let read = child.token().reason();
        assert_eq!(
            won,
            read == Some(CancelReason::Timeout),
            "cancel returned {won} while the child reads {read:?}"
        );
        assert_eq!(parent.token().reason(), Some(CancelReason::Shutdown));
    });
}

/// A cancel of a linked parent racing a cancel of the tree parent: each returns only once the
/// linked token's child reads cancelled (the walk that finds the linked token cancelled by the
/// other waits for that walk's descent).
#[test]
fn linked_parent_cancel_vs_tree_parent_cancel_return_with_every_descendant_cancelled() {
    model("linked_cancel_vs_tree_cancel", || {
        let first = CancelSource::new();
        let second = CancelSource::new();
        let both = CancelSource::any_of([&first.token(), &second.token()]);
        let leaf = both.child();
        let tree_canceller = {
            let (first, leaf) = (first.clone(), leaf.token());
            thread::spawn(move || {
                first.cancel(CancelReason::Requested);
                assert!(
                    leaf.is_cancelled(),
                    "the tree parent's cancel returned before the leaf read cancelled"
                );
            })
        };
        second.cancel(CancelReason::Shutdown);
        assert!(
            leaf.is_cancelled(),
            "the linked parent's cancel returned before the leaf read cancelled"
        );
        tree_canceller.join().unwrap();
        assert_eq!(first.token().registrations(), 0);
        assert_eq!(second.token().registrations(), 0);
    });
}
