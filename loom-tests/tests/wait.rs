//! Model 3: waiting for a cancel never misses the wake-up.

use loom_tests::{block_on, model, thread};
use std::future::Future;
use std::task::{Context, Waker};
use tethered::{CancelReason, CancelSource};

/// The `cancelled()` future against a cancel on another thread. A lost wake-up would leave
/// `block_on` parked forever, which loom reports as a deadlock.
#[test]
fn cancelled_future_never_misses_the_cancel() {
    model("cancelled_future_vs_cancel", || {
        let source = CancelSource::new();
        let token = source.token();
        let canceller = thread::spawn(move || {
            source.cancel(CancelReason::Dropped);
        });
        assert_eq!(block_on(token.cancelled()), CancelReason::Dropped);
        canceller.join().unwrap();
    });
}

/// `wait_timeout` against a cancel. loom does not model time: the wait never times out, so a
/// lost wake-up is a deadlock, not a pass. The source's token is bare (nothing attached to it),
/// so its cancel takes no lock unless the waiter made the token active before it slept.
#[test]
fn wait_timeout_never_misses_the_cancel() {
    model("wait_timeout_vs_cancel", || {
        let source = CancelSource::new();
        let token = source.token();
        let canceller = thread::spawn(move || {
            source.cancel(CancelReason::Timeout);
        });
        assert_eq!(
            token.wait_timeout(std::time::Duration::from_secs(3600)),
            Some(CancelReason::Timeout)
        );
        canceller.join().unwrap();
    });
}

/// A `cancelled()` future polled once and dropped while another thread cancels: its waker is
/// either woken or removed, and nothing stays registered.
#[test]
fn dropped_cancelled_future_leaves_nothing_behind() {
    model("cancelled_future_drop_vs_cancel", || {
        let source = CancelSource::new();
        let token = source.token();
        let canceller = {
            let source = source.clone();
            thread::spawn(move || {
                source.cancel(CancelReason::Requested);
            })
        };
        let mut fut = Box::pin(token.cancelled());
        let _ = fut.as_mut().poll(&mut Context::from_waker(Waker::noop()));
        drop(fut);
        canceller.join().unwrap();
        assert_eq!(token.registrations(), 0);
    });
}

/// A child's `cancelled()` future and a thread blocked on the same child, against the
/// parent's cancel, which reaches the child as a leaf with nothing but waiters registered: its
/// lock is taken once, and both must be woken from there.
#[test]
fn a_childs_waiters_never_miss_the_parents_cancel() {
    model("child_waiters_vs_parent_cancel", || {
        let parent = CancelSource::new();
        let child = parent.child();
        let (token, blocked) = (child.token(), child.token());
        let sleeper = thread::spawn(move || blocked.wait_timeout(std::time::Duration::MAX));
        let canceller = thread::spawn(move || {
            parent.cancel(CancelReason::Shutdown);
        });
        assert_eq!(block_on(token.cancelled()), CancelReason::Shutdown);
        assert_eq!(sleeper.join().unwrap(), Some(CancelReason::Shutdown));
        canceller.join().unwrap();
        drop(child);
    });
}

/// The negative control of the model above: a leaf's cancel that leaves its waiters unwoken is
/// caught as a deadlock.
#[cfg(tethered_loom)]
#[test]
fn negative_control_a_leaf_that_forgets_its_waiters_is_caught() {
    loom_tests::fails_with_fault(
        "a_childs_waiters_never_miss_the_parents_cancel",
        "leaf_cancel_forgets_its_waiters",
        "deadlock",
    );
}

/// A root's `cancelled()` future and a thread blocked on its child, against the root's own
/// cancel: a root with nothing registered but waiters is decided in one critical section
/// (its waiters taken out there, its children handed to the walk), and both must be woken.
#[test]
fn a_roots_and_its_childs_waiters_never_miss_the_roots_cancel() {
    model("root_and_child_waiters_vs_root_cancel", || {
        let root = CancelSource::new();
        let child = root.child();
        let token = root.token();
        let blocked = child.token();
        let sleeper = thread::spawn(move || blocked.wait_timeout(std::time::Duration::MAX));
        let canceller = thread::spawn(move || {
            assert!(root.cancel(CancelReason::Timeout));
        });
        assert_eq!(block_on(token.cancelled()), CancelReason::Timeout);
        assert_eq!(sleeper.join().unwrap(), Some(CancelReason::Timeout));
        canceller.join().unwrap();
        drop(child);
    });
}

/// The negative control of the model above: a root's cancel that leaves its waiters unwoken
/// is caught as a deadlock.
#[cfg(tethered_loom)]
#[test]
fn negative_control_a_root_that_forgets_its_waiters_is_caught() {
    loom_tests::fails_with_fault(
        "a_roots_and_its_childs_waiters_never_miss_the_roots_cancel",
        "root_cancel_forgets_its_waiters",
        "deadlock",
    );
}

/// The negative control: a waiter that sleeps on a bare token without making it active first
/// is never woken by the cancel's lock-free compare-exchange, and loom reports the deadlock.
#[cfg(tethered_loom)]
#[test]
fn negative_control_a_sleeper_on_a_bare_token_is_caught() {
    loom_tests::fails_with_fault(
        "wait_timeout_never_misses_the_cancel",
        "sleeper_keeps_token_bare",
        "deadlock",
    );
}
