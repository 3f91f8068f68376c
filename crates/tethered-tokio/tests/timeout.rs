//! Scenario 1: a job spinning on its token loses to a timeout.

mod common;

use std::time::{Duration, Instant};

use common::{Probe, StopFlag, exclusive, report, runtime, spin_until};
use tethered::{CancelReason, NativeError};

const DEADLINE: Duration = Duration::from_millis(100);

#[test]
fn timeout_stops_a_spinning_closure_within_1s_with_reason_timeout() {
    let _serial = exclusive();
    let runtime = runtime();
    let probe = Probe::new();
    let result = runtime.block_on({
        let probe = probe.clone();
        async move {
            let job = tethered_tokio::spawn_native({
                let probe = probe.clone();
                move |token| probe.run_tethered(&token, || spin_until(|| token.is_cancelled()))
            });
            // The timer cannot fire before this: the measured time is an upper bound.
            probe.mark_cancel(Instant::now() + DEADLINE);
            tethered_tokio::timeout(DEADLINE, job).await
        }
    });

    assert!(
        matches!(result, Err(NativeError::Cancelled(CancelReason::Timeout))),
        "{result:?}"
    );
    let took = probe.assert_returned_in_time("timeout");
    assert_eq!(probe.reason(), Some(CancelReason::Timeout));
    report(
        "timeout (from the timer's deadline: an upper bound)",
        &mut [took],
    );
    let from_callback = probe.callback_to_return().expect("the cancel callback ran");
    eprintln!(
        "[tethered-tokio] timeout: from the cancel callback to the return: {from_callback:?}"
    );
}

#[test]
fn timeout_resolves_at_once_without_waiting_for_the_closure() {
    let _serial = exclusive();
    let runtime = runtime();
    let probe = Probe::new();
    let release = StopFlag::new();
    let result = runtime.block_on({
        let probe = probe.clone();
        let release = release.signal();
        async move {
            // A closure that ignores its token until released.
            let job = tethered_tokio::spawn_native(move |token| {
                probe.run_tethered(&token, || spin_until(|| release.is_set()))
            });
            tethered_tokio::timeout(DEADLINE, job).await
        }
    });

    assert!(matches!(
        result,
        Err(NativeError::Cancelled(CancelReason::Timeout))
    ));
    assert!(
        !probe.returned(),
        "timeout waited for the closure to return"
    );
    release.set();
    assert!(probe.wait_returned(common::RELEASE));
}

#[test]
fn timeout_returns_the_result_of_a_job_that_finishes_first() {
    let runtime = runtime();
    let result = runtime.block_on(async {
        let job = tethered_tokio::spawn_native(|_token| 6 * 7);
        tethered_tokio::timeout(Duration::from_secs(60), job).await
    });
    assert_eq!(result.unwrap(), 42);
}

#[test]
fn naive_spawn_blocking_keeps_spinning_after_tokio_timeout() {
    let _serial = exclusive();
    let runtime = runtime();
    let stop = StopFlag::new();
    let probe = Probe::new();
    let result = runtime.block_on({
        let probe = probe.clone();
        let stop = stop.signal();
        async move {
            let naive = tokio::task::spawn_blocking(move || {
                probe.run_naive(|| spin_until(|| stop.is_set()))
            });
            tokio::time::timeout(DEADLINE, naive).await
        }
    });
    assert!(result.is_err(), "the naive job cannot finish by itself");

    probe.assert_still_running_after_watch("naive timeout");

    stop.set();
    assert!(probe.wait_returned(common::RELEASE));
}

#[test]
fn timeout_fixes_its_deadline_when_called_not_when_first_polled() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("build a runtime");
    let result = runtime.block_on(async {
        let job = tethered_tokio::spawn_native(|token| token.wait());
        let raced = tethered_tokio::timeout(DEADLINE, job);
        // Past the deadline before the first poll (blocking the runtime's only thread on
        // purpose). Fired on the timer's next turn, the timeout wins against a second timeout
        // of half its duration started now, which tokio polls after it; a deadline counted
        // from the first poll would lose.
        std::thread::sleep(DEADLINE * 2);
        tokio::time::timeout(DEADLINE / 2, raced).await
    });
    assert!(
        matches!(
            result,
            Ok(Err(NativeError::Cancelled(CancelReason::Timeout)))
        ),
        "{result:?}"
    );
}
