//! Child sources: cancellation flows down with its reason, never up, and links do not pile up.

use std::thread;

use tethered::{CancelReason, CancelSource, Cause};

#[test]
fn parent_cancel_reaches_child_with_the_same_reason_and_cause() {
    let parent = CancelSource::new();
    let child = parent.token().child();
    let grandchild = child.token().child();
    let cause = Cause::msg("client left");
    parent.cancel_with_cause(CancelReason::Dropped, cause.clone());
    for token in [child.token(), grandchild.token()] {
        assert_eq!(token.reason(), Some(CancelReason::Dropped));
        assert!(
            token.cause().unwrap().ptr_eq(&cause),
            "the same cause, not a copy"
        );
    }
}

#[test]
fn child_cancel_never_touches_the_parent() {
    let parent = CancelSource::new();
    let child = parent.token().child();
    let sibling = parent.token().child();
    assert!(child.cancel(CancelReason::Requested));
    assert!(!parent.is_cancelled());
    assert!(!sibling.is_cancelled());
}

#[test]
fn first_reason_wins_when_child_was_cancelled_first() {
    let parent = CancelSource::new();
    let child = parent.token().child();
    child.cancel(CancelReason::Timeout);
    parent.cancel(CancelReason::Shutdown);
    assert_eq!(child.token().reason(), Some(CancelReason::Timeout));
}

#[test]
fn child_of_a_cancelled_token_starts_cancelled() {
    let parent = CancelSource::new();
    parent.cancel(CancelReason::Shutdown);
    let child = parent.token().child();
    assert_eq!(child.token().reason(), Some(CancelReason::Shutdown));
    assert_eq!(parent.token().registrations(), 0);
}

#[test]
fn dropping_children_unlinks_them_from_the_parent() {
    let parent = CancelSource::new();
    let children: Vec<_> = (0..100).map(|_| parent.token().child()).collect();
    assert_eq!(parent.token().registrations(), 100);
    drop(children);
    assert_eq!(parent.token().registrations(), 0);
    for _ in 0..10_000 {
        let child = parent.token().child();
        drop(child);
    }
    assert_eq!(parent.token().registrations(), 0);
}

#[test]
fn child_link_lives_as_long_as_any_child_token() {
    let parent = CancelSource::new();
    let child_token = parent.token().child().token(); // the child source is dropped at once
    assert_eq!(parent.token().registrations(), 1);
    parent.cancel(CancelReason::Timeout);
    assert_eq!(child_token.reason(), Some(CancelReason::Timeout));
    drop(child_token);
    assert_eq!(parent.token().registrations(), 0);
}

#[test]
fn cancel_fans_out_to_many_children_across_threads() {
    let parent = CancelSource::new();
    let waiters: Vec<_> = (0..16)
        .map(|_| {
            let token = parent.token().child().token();
            thread::spawn(move || token.wait())
        })
        .collect();
    parent.cancel(CancelReason::Shutdown);
    for waiter in waiters {
        assert_eq!(waiter.join().unwrap(), CancelReason::Shutdown);
    }
}

#[test]
fn child_dropped_while_the_parent_cancels_does_not_deadlock_or_leak() {
    for _ in 0..200 {
        let parent = CancelSource::new();
        let children: Vec<_> = (0..8).map(|_| parent.token().child()).collect();
        let canceller = {
            let parent = parent.clone();
            thread::spawn(move || parent.cancel(CancelReason::Requested))
        };
        drop(children);
        canceller.join().unwrap();
        assert_eq!(parent.token().registrations(), 0);
    }
}

#[test]
fn a_child_cancelled_while_its_parents_cancel_walks_down_takes_the_parents_reason() {
    let parent = tethered::CancelSource::new();
    let child = parent.token().child();
    let late = child.clone();
    // Runs on the cancelling thread before the walk reaches the child: a handle dropped right
    // as its request's deadline passed, say.
    let _drop_on_cancel = parent.token().on_cancel(move |_| {
        late.cancel(tethered::CancelReason::Dropped);
    });
    assert!(parent.cancel(tethered::CancelReason::Timeout));
    assert_eq!(
        child.token().reason(),
        Some(tethered::CancelReason::Timeout)
    );
    // A child cancelled before its parent keeps its own reason.
    let parent = tethered::CancelSource::new();
    let child = parent.token().child();
    child.cancel(tethered::CancelReason::Dropped);
    parent.cancel(tethered::CancelReason::Timeout);
    assert_eq!(
        child.token().reason(),
        Some(tethered::CancelReason::Dropped)
    );
}
