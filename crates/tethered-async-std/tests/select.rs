//! Scenario 2: the job loses a race (`FutureExt::race`, async-std's `select!`).

mod common;

use common::AsyncStd;
use tethered_test_support::scenarios::select;

#[test]
fn a_job_that_loses_a_race_is_cancelled_with_dropped_and_returns_within_1s() {
    select::a_job_that_loses_a_race_is_cancelled::<AsyncStd>();
}
