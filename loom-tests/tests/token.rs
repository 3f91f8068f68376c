//! Models 1 and 2: the cancel flag, the reason, and concurrent cancels.

use loom_tests::{model, sync::Arc, thread};
use tethered::{CancelReason, CancelSource};

/// Model 1: an observer that sees the flag also sees the reason.
#[test]
fn observer_that_sees_the_flag_sees_the_reason() {
    model("cancel_vs_is_cancelled_and_reason", || {
        let source = CancelSource::new();
        let token = source.token();
        let observer = thread::spawn(move || {
            if token.is_cancelled() {
                assert_eq!(token.reason(), Some(CancelReason::Timeout));
                assert!(token.check().is_err());
            } else if let Some(reason) = token.reason() {
                // The flag was set between the two calls.
                assert_eq!(reason, CancelReason::Timeout);
            }
        });
        assert!(source.cancel(CancelReason::Timeout));
        observer.join().unwrap();
    });
}

/// Model 2: two concurrent cancels: exactly one wins, and everyone agrees on its reason.
#[test]
fn two_concurrent_cancels_have_one_winner_and_one_reason() {
    model("two_concurrent_cancels", || {
        let source = Arc::new(CancelSource::new());
        let other = source.clone();
        let second = thread::spawn(move || {
            let won = other.cancel(CancelReason::Shutdown);
            (won, other.token().reason())
        });
        let won_here = source.cancel(CancelReason::Timeout);
        let seen_here = source.token().reason();
        let (won_there, seen_there) = second.join().unwrap();
        assert!(won_here ^ won_there, "exactly one cancel wins");
        let winner = if won_here {
            CancelReason::Timeout
        } else {
            CancelReason::Shutdown
        };
        assert_eq!(seen_here, Some(winner));
        assert_eq!(seen_there, Some(winner));
        assert_eq!(source.token().reason(), Some(winner));
    });
}
