//! Scenario 2: the job loses a race (`FutureExt::race`, async-std's `select!`).

mod common;

use std::time::{Duration, Instant};

use async_std::prelude::FutureExt;
use async_std::task;
use common::{Naive, PATIENCE, Probe, bounded, report};
use tethered::CancelReason;

const WINNER_AFTER: Duration = Duration::from_millis(50);

#[test]
fn a_job_that_loses_a_race_is_cancelled_with_dropped_and_returns_within_1s() {
    bounded("the select scenario", PATIENCE, || {
        let probe = Probe::new();
        let job = tethered_async_std::spawn_native(probe.spinning_job());
        probe.watch(&job);
        probe.wait_started();
        let job_won = task::block_on(
            async {
                let _ = job.await;
                true
            }
            .race(async {
                task::sleep(WINNER_AFTER).await;
                false
            }),
        );
        assert!(
            !job_won,
            "the spinning job cannot win before it is cancelled"
        );
        report("select", vec![probe.cancel_to_return()]);
        assert_eq!(probe.seen_reason(), Some(CancelReason::Dropped));

        let naive = Naive::new();
        let handle = task::spawn_blocking(naive.spinning_job());
        naive.wait_started(1);
        let job_won = task::block_on(
            async {
                handle.await;
                true
            }
            .race(async {
                task::sleep(WINNER_AFTER).await;
                false
            }),
        );
        let gave_up = Instant::now();
        assert!(!job_won);
        naive.assert_leaks(1, gave_up, "select");
        naive.release();
    });
}
