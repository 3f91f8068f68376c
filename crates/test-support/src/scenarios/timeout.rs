//! Scenario 1: a job loses to the runtime's timer.

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use tethered::{CancelReason, NativeError, Tethered};

use crate::{Naive, PATIENCE, Probe, RETURN_BOUND, Runtime, bounded, report};

const DEADLINE: Duration = Duration::from_millis(50);

/// The adapter's `timeout` cancels a spinning job with `Timeout`, and its closure returns
/// within [`RETURN_BOUND`]; the runtime's own timeout around a naive job leaves it running.
pub fn cancels_a_spinning_job<R: Runtime>() {
    bounded("the timeout scenario", PATIENCE, || {
        let probe = Probe::new();
        let job = R::spawn_native(probe.spinning_job());
        probe.wait_started();
        let deadline = Instant::now() + DEADLINE;
        let result = R::block_on(job.timeout(DEADLINE));
        // The closure was running: the caller stops waiting at once, unless the closure saw
        // the cancel and returned before the timeout looked at the job again.
        assert!(
            matches!(
                result,
                Err(NativeError::Abandoned {
                    reason: CancelReason::Timeout,
                    grace: Duration::ZERO,
                    ..
                }) | Err(NativeError::Cancelled {
                    reason: CancelReason::Timeout,
                    returned: Some(_),
                    ..
                })
            ),
            "{result:?}"
        );
        report(R::NAME, "timeout", [probe.cancel_to_return()]);
        // What a caller sees: the deadline passing, the timer firing, the cancel, the return.
        let after_deadline = probe.returned_at().saturating_duration_since(deadline);
        eprintln!(
            "[{}] timeout: the closure returned {after_deadline:?} after the deadline",
            R::NAME
        );
        assert!(after_deadline <= RETURN_BOUND);
        assert_eq!(probe.reason(), Some(CancelReason::Timeout));

        let naive = Naive::new();
        let task = R::spawn_blocking(naive.spinning_job());
        naive.wait_started(1);
        let result = R::block_on(R::give_up_after(DEADLINE, task));
        let gave_up = Instant::now();
        assert!(
            result.is_none(),
            "the naive job cannot finish before its flag is set"
        );
        naive.assert_leaks(R::NAME, "timeout", 1, gave_up);
        naive.release();
    });
}

/// A job that finishes before its deadline gives its result, and is not cancelled.
pub fn returns_the_result_when_the_job_finishes_first<R: Runtime>() {
    bounded("a job beating its timeout", PATIENCE, || {
        let job = R::spawn_native(|token| token.is_cancelled());
        let token = job.token().clone();
        let result = R::block_on(job.timeout(PATIENCE));
        assert!(!result.expect("the job finished first"));
        assert!(!token.is_cancelled());
    });
}

/// The timeout resolves on time even when the closure ignores its token: it does not wait for
/// the closure.
pub fn resolves_at_once_without_waiting_for_the_closure<R: Runtime>() {
    bounded(
        "a timeout while the closure ignores its token",
        PATIENCE,
        || {
            let naive = Naive::new();
            let stubborn = naive.spinning_job();
            // A closure that never looks at its token: the caller still gets its timeout on time.
            let job = R::spawn_native(move |_token| stubborn());
            naive.wait_started(1);
            let started = Instant::now();
            let result = R::block_on(job.timeout(DEADLINE));
            let waited = started.elapsed();
            assert!(matches!(
                result,
                Err(NativeError::Abandoned {
                    reason: CancelReason::Timeout,
                    ..
                })
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

/// The deadline is fixed when `timeout` is called, not when it is first polled.
pub fn the_clock_starts_when_timeout_is_called<R: Runtime>() {
    bounded("a timeout polled after its deadline", PATIENCE, || {
        let job = R::spawn_native(|token| token.wait());
        let mut deadline = pin!(job.timeout(DEADLINE));
        std::thread::sleep(DEADLINE * 2);
        // Polled once, after its deadline passed: it fires on that poll. Had the clock started
        // at the first poll (as `async_std::future::timeout`'s does), it would be pending.
        let first_poll = R::block_on(poll_fn(|cx| Poll::Ready(deadline.as_mut().poll(cx))));
        let Poll::Ready(Err(err)) = first_poll else {
            panic!("the deadline had passed: {first_poll:?}");
        };
        assert_eq!(err.cancel_reason(), Some(CancelReason::Timeout));
    });
}

/// A timeout too large for the runtime's clock never fires.
pub fn a_timeout_too_large_for_the_clock_never_fires<R: Runtime>() {
    bounded("a timeout of Duration::MAX", PATIENCE, || {
        let job = R::spawn_native(|_token| 7);
        let result = R::block_on(job.timeout(Duration::MAX));
        assert_eq!(result.unwrap(), 7);
    });
}
