//! Scenario 1: a job spinning on its token loses to a timeout.

mod common;

use std::time::{Duration, Instant};

use common::{
    RUNTIME, assert_naive_job_leaks, assert_tethered_job_returns, exclusive, runtime,
    wait_until_async,
};
use tethered::{CancelReason, NativeError, Tethered};
use tethered_test_support::{Naive, RETURN_BOUND};

const DEADLINE: Duration = Duration::from_millis(100);

#[test]
fn timeout_stops_a_spinning_closure_within_1s_with_reason_timeout() {
    let probe = assert_tethered_job_returns(
        "timeout (from the timer's deadline: an upper bound)",
        CancelReason::Timeout,
        async |job, probe| {
            // The timer cannot fire before this: the measured time is an upper bound.
            probe.mark_cancel(Instant::now() + DEADLINE);
            let result = job.timeout(DEADLINE).await;
            // The closure was running: the caller stops waiting at once, unless the closure
            // saw the cancel and returned before the timeout looked at the job again.
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
        },
    );
    eprintln!(
        "[{RUNTIME}] timeout: from the cancel callback to the return: {:?}",
        probe.callback_to_return()
    );
}

#[test]
fn timeout_resolves_at_once_without_waiting_for_the_closure() {
    let _serial = exclusive();
    let runtime = runtime();
    let naive = Naive::new();
    let stubborn = naive.spinning_job();
    let result = runtime.block_on(async {
        // A closure that ignores its token until released.
        let job = tethered_tokio::spawn_native(move |_token| stubborn());
        assert!(wait_until_async(RETURN_BOUND, || naive.started() == 1).await);
        job.timeout(DEADLINE).await
    });

    // The closure runs on: the timeout gave up on it at once.
    assert!(
        matches!(
            result,
            Err(NativeError::Abandoned {
                reason: CancelReason::Timeout,
                ..
            })
        ),
        "{result:?}"
    );
    assert_eq!(
        naive.running(),
        1,
        "timeout waited for the closure to return"
    );
    naive.release();
}

#[test]
fn timeout_returns_the_result_of_a_job_that_finishes_first() {
    let runtime = runtime();
    let result = runtime.block_on(async {
        let job = tethered_tokio::spawn_native(|_token| 6 * 7);
        job.timeout(Duration::from_secs(60)).await
    });
    assert_eq!(result.unwrap(), 42);
}

#[test]
fn naive_spawn_blocking_keeps_spinning_after_tokio_timeout() {
    assert_naive_job_leaks("timeout", async |task| {
        let result = tokio::time::timeout(DEADLINE, task).await;
        assert!(result.is_err(), "the naive job cannot finish by itself");
    });
}

#[test]
fn timeout_fixes_its_deadline_when_called_not_when_first_polled() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("build a runtime");
    let result = runtime.block_on(async {
        let job = tethered_tokio::spawn_native(|token| token.wait());
        let raced = job.timeout(DEADLINE);
        // Past the deadline before the first poll (blocking the runtime's only thread on
        // purpose). Fired on the timer's next turn, the timeout wins against a second timeout
        // of half its duration started now, which tokio polls after it; a deadline counted
        // from the first poll would lose.
        std::thread::sleep(DEADLINE * 2);
        tokio::time::timeout(DEADLINE / 2, raced).await
    });
    // Whether the closure had started or not, the inner timeout fired first.
    let Ok(Err(err)) = result else {
        panic!("the inner timeout fired first: {result:?}");
    };
    assert_eq!(err.cancel_reason(), Some(CancelReason::Timeout));
}
