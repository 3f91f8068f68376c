//! Scenario 7: spawning where other runtimes fail, and a panicking job.
//!
//! async-std's executor and blocking pool are process-wide, start on first use and never shut
//! down: there is no "outside a runtime" and no "after shutdown". These tests pin that spawning
//! through `AsyncStdSpawner` works from a plain thread rather than expect a `SpawnError` that
//! cannot happen.

mod common;

use common::AsyncStd;
use tethered_test_support::scenarios::errors;

#[test]
fn spawning_works_on_a_thread_outside_any_async_std_task() {
    errors::spawning_works_on_a_plain_thread::<AsyncStd>();
}

#[test]
fn a_panicking_job_gives_panicked_and_the_awaiting_task_runs_on() {
    errors::a_panicking_job_gives_panicked_and_the_awaiting_task_runs_on::<AsyncStd>();
}
