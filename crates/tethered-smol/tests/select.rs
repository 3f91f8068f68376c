//! Scenario 2: the job loses a race (`smol::future::or`, smol's `select!`).

mod common;

use common::Smol;
use tethered_test_support::scenarios::select;

#[test]
fn a_job_that_loses_a_race_is_cancelled_with_dropped_and_returns_within_1s() {
    select::a_job_that_loses_a_race_is_cancelled::<Smol>();
}
