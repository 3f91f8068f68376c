//! Model: splicing a token out of the tree (its last handle went) against the cancels and
//! splices around it. The guarantee: whatever the interleaving, a cancel of the root reaches
//! every token still held below it, and the root's link list ends exact.

use loom_tests::{JoinableSpawner, model, thread};
use tethered::{CancelReason, CancelSource, JobOptions, Tethered};

/// The middle level's last handle goes while the root is cancelled: the leaf is cancelled with
/// the root's reason either way (moved up to the root first, or reached through the middle).
#[test]
fn splice_vs_parent_cancel() {
    model("splice_vs_parent_cancel", || {
        let root = CancelSource::new();
        let middle = root.child();
        let leaf = middle.child();
        let canceller = {
            let root = root.clone();
            thread::spawn(move || {
                root.cancel(CancelReason::Shutdown);
            })
        };
        let splicer = thread::spawn(move || drop(middle));
        canceller.join().unwrap();
        splicer.join().unwrap();
        assert_eq!(leaf.token().reason(), Some(CancelReason::Shutdown));
        assert_eq!(root.token().registrations(), 0);
    });
}

/// Two levels in a row lose their last handles at once: the leaf ends linked to the root (once),
/// and the root's cancel reaches it.
#[test]
fn splice_vs_parent_splice() {
    model("splice_vs_parent_splice", || {
        let root = CancelSource::new();
        let upper = root.child();
        let lower = upper.child();
        let leaf = lower.child();
        let first = thread::spawn(move || drop(upper));
        let second = thread::spawn(move || drop(lower));
        first.join().unwrap();
        second.join().unwrap();
        assert_eq!(root.token().registrations(), 1, "the leaf, linked once");
        root.cancel(CancelReason::Timeout);
        assert_eq!(leaf.token().reason(), Some(CancelReason::Timeout));
        assert_eq!(root.token().registrations(), 0);
    });
}

/// The middle level is spliced while the leaf cancels itself and goes: nothing stays linked, and
/// the leaf keeps its own reason.
#[test]
fn splice_vs_child_cancel_and_drop() {
    model("splice_vs_child_cancel_and_drop", || {
        let root = CancelSource::new();
        let middle = root.child();
        let leaf = middle.child();
        let observer = leaf.token();
        let splicer = thread::spawn(move || drop(middle));
        let leaver = thread::spawn(move || {
            leaf.cancel(CancelReason::Requested);
            drop(leaf);
        });
        splicer.join().unwrap();
        leaver.join().unwrap();
        assert_eq!(root.token().registrations(), 0);
        root.cancel(CancelReason::Shutdown);
        assert_eq!(observer.reason(), Some(CancelReason::Requested));
    });
}

/// A job's token is sealed (the job returned) while the last handle of its child goes, the
/// grandchild held: the grandchild is cut loose (the root's cancel never reaches it through a
/// finished job), and the root ends with no link.
#[test]
fn splice_vs_seal_of_the_parent() {
    model("splice_vs_seal_of_the_parent", || {
        let root = CancelSource::new();
        let spawner = JoinableSpawner::default();
        let job = tethered::spawn(
            JobOptions::new()
                .child_of(&root.token())
                .on(spawner.clone()),
            |_| (),
        )
        .unwrap();
        let child = job.token().child();
        let grandchild = child.child();
        let splicer = thread::spawn(move || drop(child));
        job.join_blocking().unwrap();
        spawner.join_all();
        splicer.join().unwrap();
        assert_eq!(root.token().registrations(), 0);
        root.cancel(CancelReason::Shutdown);
        assert!(!grandchild.is_cancelled(), "its job finished first");
    });
}

/// A child is made of the leaf while the level above the leaf is spliced out (the leaf moves up
/// to the root meanwhile): the root's cancel reaches the new child either way.
#[test]
fn splice_vs_child_of_the_moving_leaf() {
    model("splice_vs_child_of_the_moving_leaf", || {
        let root = CancelSource::new();
        let middle = root.child();
        let leaf = middle.child();
        let splicer = thread::spawn(move || drop(middle));
        let grandchild = leaf.child();
        splicer.join().unwrap();
        root.cancel(CancelReason::Shutdown);
        assert_eq!(grandchild.token().reason(), Some(CancelReason::Shutdown));
        assert_eq!(leaf.token().reason(), Some(CancelReason::Shutdown));
        assert_eq!(root.token().registrations(), 0);
    });
}
