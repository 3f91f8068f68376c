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

/// A cancel with a cause (which takes the token's lock, making the bare token active first)
/// against a drop guard's cancel (which tries the bare token's compare-exchange before it
/// reads the word): one wins, and the token reads its reason, with the cause only if the cancel
/// that gave it won.
#[test]
fn a_cause_against_a_guards_guess_has_one_winner() {
    // Which cancel won, over the interleavings: both must have been explored.
    static WON: [std::sync::atomic::AtomicBool; 2] = [
        std::sync::atomic::AtomicBool::new(false),
        std::sync::atomic::AtomicBool::new(false),
    ];
    model("cause_vs_guard_guess", || {
        let source = CancelSource::new();
        let token = source.token();
        let guard = source.clone().drop_guard();
        let guarded = thread::spawn(move || drop(guard));
        let won_here = source.cancel_with_cause(CancelReason::Failed, tethered::Cause::msg("why"));
        guarded.join().unwrap();
        WON[usize::from(won_here)].store(true, std::sync::atomic::Ordering::Relaxed);
        if won_here {
            assert_eq!(token.reason(), Some(CancelReason::Failed));
            assert_eq!(token.cause().map(|c| c.to_string()), Some("why".into()));
        } else {
            assert_eq!(token.reason(), Some(CancelReason::Dropped));
            assert!(token.cause().is_none());
        }
    });
    #[cfg(tethered_loom)]
    assert!(
        WON.iter()
            .all(|won| won.load(std::sync::atomic::Ordering::Relaxed)),
        "both cancels won in some interleaving"
    );
}
