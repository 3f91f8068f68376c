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
