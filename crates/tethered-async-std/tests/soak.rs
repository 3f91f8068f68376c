//! Scenario 6: 10,000 jobs cancelled at random points, then nothing runs and nothing burns CPU.
//!
//! Alone in its binary: `tethered::stats()` and the process's CPU clock are process-wide, and
//! another test running alongside would move both.

mod common;

use common::AsyncStd;
use tethered_test_support::scenarios::soak;

#[test]
fn ten_thousand_jobs_cancelled_at_random_points_leave_nothing_running_and_no_cpu_burn() {
    soak::ten_thousand_jobs_cancelled_at_random_points::<AsyncStd>();
}
