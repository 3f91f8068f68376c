//! Scenario 2: the job loses a race (the runtime's select of two futures).

use std::time::{Duration, Instant};

use tethered::CancelReason;

use crate::{Naive, PATIENCE, Probe, Runtime, bounded, report};

const WINNER_AFTER: Duration = Duration::from_millis(50);

/// A job that loses a race is cancelled with `Dropped` and its closure returns within
/// [`RETURN_BOUND`](crate::RETURN_BOUND); a naive job that loses the same race runs on.
pub fn a_job_that_loses_a_race_is_cancelled<R: Runtime>() {
    bounded("the select scenario", PATIENCE, || {
        let probe = Probe::new();
        let job = R::spawn_native(probe.spinning_job());
        probe.wait_started();
        let job_won = R::block_on(R::race(
            async {
                let _ = job.await;
                true
            },
            async {
                R::sleep(WINNER_AFTER).await;
                false
            },
        ));
        assert!(
            !job_won,
            "the spinning job cannot win before it is cancelled"
        );
        report(R::NAME, "select", [probe.cancel_to_return()]);
        assert_eq!(probe.reason(), Some(CancelReason::Dropped));

        let naive = Naive::new();
        let task = R::spawn_blocking(naive.spinning_job());
        naive.wait_started(1);
        let job_won = R::block_on(R::race(
            async {
                task.await;
                true
            },
            async {
                R::sleep(WINNER_AFTER).await;
                false
            },
        ));
        let gave_up = Instant::now();
        assert!(!job_won);
        naive.assert_leaks(R::NAME, "select", 1, gave_up);
        naive.release();
    });
}
