//! Scenario 2: the job loses a race (`smol::future::or`, smol's `select!`).

mod common;

use std::time::{Duration, Instant};

use common::{Naive, PATIENCE, Probe, bounded, report};
use smol::Timer;
use tethered::CancelReason;

const WINNER_AFTER: Duration = Duration::from_millis(50);

#[test]
fn a_job_that_loses_a_race_is_cancelled_with_dropped_and_returns_within_1s() {
    bounded("the select scenario", PATIENCE, || {
        let probe = Probe::new();
        let job = tethered_smol::spawn_native(probe.spinning_job());
        probe.watch(&job);
        probe.wait_started();
        let job_won = smol::block_on(smol::future::or(
            async {
                let _ = job.await;
                true
            },
            async {
                Timer::after(WINNER_AFTER).await;
                false
            },
        ));
        assert!(
            !job_won,
            "the spinning job cannot win before it is cancelled"
        );
        report("select", vec![probe.cancel_to_return()]);
        assert_eq!(probe.seen_reason(), Some(CancelReason::Dropped));

        let naive = Naive::new();
        let task = smol::unblock(naive.spinning_job());
        naive.wait_started(1);
        let job_won = smol::block_on(smol::future::or(
            async {
                task.await;
                true
            },
            async {
                Timer::after(WINNER_AFTER).await;
                false
            },
        ));
        let gave_up = Instant::now();
        assert!(!job_won);
        naive.assert_leaks(1, gave_up, "select");
        naive.release();
    });
}
