//! The token pair: flag, reason, first cancel wins, guards.

use std::sync::{Arc, Barrier};
use std::thread;

use tethered::{CancelGuard, CancelReason, CancelSource, CancelToken, Cancelled, Cause};

fn assert_send_sync_static<T: Send + Sync + 'static>() {}

#[test]
fn token_and_source_are_send_sync_static() {
    assert_send_sync_static::<CancelToken>();
    assert_send_sync_static::<CancelSource>();
    assert_send_sync_static::<CancelGuard>();
    assert_send_sync_static::<Cancelled>();
    assert_send_sync_static::<tethered::WaitCancelled>();
    assert_send_sync_static::<tethered::CallbackGuard>();
}

#[test]
fn new_source_is_not_cancelled() {
    let source = CancelSource::default();
    let token = source.token();
    assert!(!source.is_cancelled());
    assert!(!token.is_cancelled());
    assert_eq!(token.reason(), None);
    assert!(token.check().is_ok());
}

#[test]
fn cancel_sets_flag_and_reason_on_every_token_and_clone() {
    let source = CancelSource::new();
    let token = source.token();
    let clone = token.clone();
    let other_source = source.clone();
    assert!(other_source.cancel(CancelReason::Timeout));
    for t in [&token, &clone, &source.token()] {
        assert!(t.is_cancelled());
        assert_eq!(t.reason(), Some(CancelReason::Timeout));
        assert_eq!(t.check(), Err(Cancelled::new(CancelReason::Timeout)));
    }
    assert!(source.is_cancelled());
}

#[test]
fn only_the_first_cancel_returns_true_and_its_reason_and_cause_stick() {
    let source = CancelSource::new();
    assert!(source.cancel_with_cause(CancelReason::Requested, Cause::msg("first")));
    assert!(!source.cancel(CancelReason::Timeout));
    assert!(!source.cancel_with_cause(CancelReason::Requested, Cause::msg("second")));
    assert_eq!(source.token().reason(), Some(CancelReason::Requested));
    assert_eq!(source.token().cause().unwrap().to_string(), "first");
}

#[test]
fn concurrent_cancels_have_exactly_one_winner_and_everyone_agrees_on_its_reason() {
    for _ in 0..200 {
        let source = CancelSource::new();
        let barrier = Arc::new(Barrier::new(4));
        let threads: Vec<_> = (0..4)
            .map(|i| {
                let source = source.clone();
                let barrier = barrier.clone();
                thread::spawn(move || {
                    let cause = Cause::msg(format!("thread {i}"));
                    barrier.wait();
                    let won = source.cancel_with_cause(CancelReason::Requested, cause.clone());
                    (won, cause, source.token().cause().unwrap())
                })
            })
            .collect();
        let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let winners: Vec<_> = results.iter().filter(|(won, ..)| *won).collect();
        assert_eq!(winners.len(), 1);
        let winning_cause = winners[0].1.clone();
        for (_, _, seen) in &results {
            assert!(seen.ptr_eq(&winning_cause));
        }
    }
}

#[test]
fn flag_seen_means_reason_seen_from_another_thread() {
    for _ in 0..200 {
        let source = CancelSource::new();
        let token = source.token();
        let observer = thread::spawn(move || {
            while !token.is_cancelled() {
                std::hint::spin_loop();
            }
            token.reason()
        });
        source.cancel(CancelReason::Shutdown);
        assert_eq!(observer.join().unwrap(), Some(CancelReason::Shutdown));
    }
}

#[test]
fn drop_guard_cancels_with_dropped() {
    let source = CancelSource::new();
    let token = source.token();
    let guard = source.drop_guard();
    assert!(!token.is_cancelled());
    assert!(guard.token().same_as(&token));
    drop(guard);
    assert_eq!(token.reason(), Some(CancelReason::Dropped));
}

#[test]
fn disarmed_guard_does_not_cancel_and_returns_the_source() {
    let source = CancelSource::new();
    let token = source.token();
    let source = source.drop_guard().disarm();
    assert!(!token.is_cancelled());
    source.cancel(CancelReason::Requested);
    assert_eq!(token.reason(), Some(CancelReason::Requested));
}

#[test]
fn drop_guard_keeps_an_earlier_reason() {
    let source = CancelSource::new();
    let token = source.token();
    let guard = source.drop_guard();
    guard.source().cancel(CancelReason::Timeout);
    drop(guard);
    assert_eq!(token.reason(), Some(CancelReason::Timeout));
}

#[test]
fn reasons_display_what_happened() {
    assert_eq!(
        CancelReason::Requested.to_string(),
        "cancellation was requested"
    );
    assert_eq!(CancelReason::Dropped.to_string(), "the caller gave up");
    assert_eq!(CancelReason::Timeout.to_string(), "the deadline passed");
    assert_eq!(
        CancelReason::Shutdown.to_string(),
        "its owner is shutting down"
    );
    assert_eq!(
        CancelReason::Failed.to_string(),
        "something it depends on failed"
    );
    assert_eq!(Cause::msg("quota").to_string(), "quota");
    let err: Box<dyn std::error::Error + Send + Sync> =
        Box::new(Cancelled::new(CancelReason::Timeout));
    assert_eq!(err.to_string(), "cancelled: the deadline passed");
}

#[test]
fn same_as_compares_sources() {
    let a = CancelSource::new();
    let b = CancelSource::new();
    assert!(a.token().same_as(&a.clone().token()));
    assert!(!a.token().same_as(&b.token()));
}

#[test]
fn debug_output_says_whether_cancelled() {
    let source = CancelSource::new();
    assert_eq!(
        format!("{:?}", source.token()),
        "CancelToken { cancelled: false }"
    );
    source.cancel(CancelReason::Requested);
    assert_eq!(format!("{source:?}"), "CancelSource { cancelled: true }");
}

#[test]
fn source_child_is_token_child() {
    let parent = CancelSource::new();
    let child = parent.child();
    assert_eq!(parent.token().registrations(), 1);
    parent.cancel(CancelReason::Shutdown);
    assert_eq!(child.token().reason(), Some(CancelReason::Shutdown));
}
