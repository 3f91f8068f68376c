//! Scenario 5: 200 cancelled jobs on a 4-thread pool must leave room for a fresh job.
//!
//! Alone in its binary: the driver re-runs this test in a child process whose environment sets
//! `BLOCKING_MAX_THREADS=4`, which the `blocking` pool under async-std's `spawn_blocking` reads
//! once per process (see [`pool_exhaustion`]).

mod common;

use common::AsyncStd;
use tethered_test_support::scenarios::pool_exhaustion;

#[test]
fn a_fresh_job_runs_within_1s_after_200_cancelled_jobs_on_a_4_thread_pool() {
    pool_exhaustion::a_fresh_job_runs_after_200_cancelled_jobs::<AsyncStd>(
        "a_fresh_job_runs_within_1s_after_200_cancelled_jobs_on_a_4_thread_pool",
    );
}
