//! Scenario 7: spawning where other runtimes fail, and a panicking job.
//!
//! The `blocking` pool is process-wide: there is no "outside a runtime" and no "after
//! shutdown" for it, so these tests pin that spawning through `SmolSpawner` works in both places
//! rather than expect a `SpawnError` that cannot happen.

mod common;

use std::sync::Arc;

use common::Smol;
use smol::Executor;
use tethered::JobOptions;
use tethered_smol::SmolSpawner;
use tethered_test_support::scenarios::errors;
use tethered_test_support::{PATIENCE, bounded};

#[test]
fn spawning_works_on_a_thread_without_any_executor() {
    errors::spawning_works_on_a_plain_thread::<Smol>();
}

#[test]
fn spawning_works_after_the_executor_that_used_it_was_dropped() {
    bounded("spawning after an executor was dropped", PATIENCE, || {
        let executor = Arc::new(Executor::new());
        let first = executor.spawn(async { tethered_smol::spawn_native(|_token| 1).await });
        assert_eq!(smol::block_on(executor.run(first)).unwrap(), 1);
        drop(executor);

        let job = tethered::spawn(JobOptions::new().on(SmolSpawner::new()), |_token| 2)
            .expect("the pool does not shut down");
        assert_eq!(smol::block_on(job).unwrap(), 2);
    });
}

#[test]
fn a_panicking_job_gives_panicked_and_the_awaiting_task_runs_on() {
    errors::a_panicking_job_gives_panicked_and_the_awaiting_task_runs_on::<Smol>();
}
