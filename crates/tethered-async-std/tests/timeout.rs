//! Scenario 1: a job loses to async-std's timer.

mod common;

use common::AsyncStd;
use tethered_test_support::scenarios::timeout;

#[test]
fn timeout_cancels_a_spinning_job_with_timeout_and_its_closure_returns_within_1s() {
    timeout::cancels_a_spinning_job::<AsyncStd>();
}

#[test]
fn timeout_returns_the_result_when_the_job_finishes_first() {
    timeout::returns_the_result_when_the_job_finishes_first::<AsyncStd>();
}

#[test]
fn timeout_resolves_at_once_without_waiting_for_the_closure() {
    timeout::resolves_at_once_without_waiting_for_the_closure::<AsyncStd>();
}

#[test]
fn the_timeout_clock_starts_when_timeout_is_called() {
    timeout::the_clock_starts_when_timeout_is_called::<AsyncStd>();
}

#[test]
fn a_timeout_too_large_for_the_clock_never_fires() {
    timeout::a_timeout_too_large_for_the_clock_never_fires::<AsyncStd>();
}
