//! Scenario 1: a job loses to smol's timer.

mod common;

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use common::{Naive, PATIENCE, Probe, RETURN_BOUND, RUNTIME, bounded, report};
use smol::Timer;
use tethered::{CancelReason, NativeError};

const DEADLINE: Duration = Duration::from_millis(50);

#[test]
fn timeout_cancels_a_spinning_job_with_timeout_and_its_closure_returns_within_1s() {
    bounded("the timeout scenario", PATIENCE, || {
        let probe = Probe::new();
        let job = tethered_smol::spawn_native(probe.spinning_job());
        probe.watch(&job);
        probe.wait_started();
        let deadline = Instant::now() + DEADLINE;
        let result = smol::block_on(tethered_smol::timeout(DEADLINE, job));
        assert!(
            matches!(result, Err(NativeError::Cancelled(CancelReason::Timeout))),
            "{result:?}"
        );
        report("timeout", vec![probe.cancel_to_return()]);
        // What a caller sees: the deadline passing, the timer firing, the cancel, the return.
        let after_deadline = probe.returned_at().saturating_duration_since(deadline);
        eprintln!(
            "[{RUNTIME}] timeout: the closure returned {after_deadline:?} after the deadline"
        );
        assert!(after_deadline <= RETURN_BOUND);
        assert_eq!(probe.seen_reason(), Some(CancelReason::Timeout));

        // Naive: smol's own timeout pattern around a plain `unblock`.
        let naive = Naive::new();
        let task = smol::unblock(naive.spinning_job());
        naive.wait_started(1);
        let timed_out = smol::block_on(smol::future::or(
            async {
                task.await;
                false
            },
            async {
                Timer::after(DEADLINE).await;
                true
            },
        ));
        let gave_up = Instant::now();
        assert!(
            timed_out,
            "the naive job cannot finish before its flag is set"
        );
        naive.assert_leaks(1, gave_up, "timeout");
        naive.release();
    });
}

#[test]
fn timeout_returns_the_result_when_the_job_finishes_first() {
    bounded("a job beating its timeout", PATIENCE, || {
        let job = tethered_smol::spawn_native(|token| token.is_cancelled());
        let token = job.token();
        let result = smol::block_on(tethered_smol::timeout(PATIENCE, job));
        assert!(!result.expect("the job finished first"));
        assert!(!token.is_cancelled());
    });
}

#[test]
fn timeout_resolves_at_once_without_waiting_for_the_closure() {
    bounded(
        "a timeout while the closure ignores its token",
        PATIENCE,
        || {
            let naive = Naive::new();
            let stubborn = naive.spinning_job();
            // A closure that never looks at its token: the caller still gets its timeout on time.
            let job = tethered_smol::spawn_native(move |_token| stubborn());
            naive.wait_started(1);
            let started = Instant::now();
            let result = smol::block_on(tethered_smol::timeout(DEADLINE, job));
            let waited = started.elapsed();
            assert!(matches!(
                result,
                Err(NativeError::Cancelled(CancelReason::Timeout))
            ));
            assert!(
                waited < DEADLINE + Duration::from_secs(1),
                "the timeout waited {waited:?}: it must not wait for the closure"
            );
            assert_eq!(naive.running(), 1);
            naive.release();
        },
    );
}

#[test]
fn the_timeout_clock_starts_when_timeout_is_called() {
    bounded("a timeout polled after its deadline", PATIENCE, || {
        let job = tethered_smol::spawn_native(|token| token.wait());
        let mut deadline = pin!(tethered_smol::timeout(DEADLINE, job));
        std::thread::sleep(DEADLINE * 2);
        // Polled once, after its deadline passed: it fires on that poll. Had the clock started
        // at the first poll, it would be pending.
        let first_poll = smol::block_on(poll_fn(|cx| Poll::Ready(deadline.as_mut().poll(cx))));
        assert!(matches!(
            first_poll,
            Poll::Ready(Err(NativeError::Cancelled(CancelReason::Timeout)))
        ));
    });
}

#[test]
fn a_timeout_too_large_for_the_clock_never_fires() {
    bounded("a timeout of Duration::MAX", PATIENCE, || {
        let job = tethered_smol::spawn_native(|_token| 7);
        let result = smol::block_on(tethered_smol::timeout(Duration::MAX, job));
        assert_eq!(result.unwrap(), 7);
    });
}
