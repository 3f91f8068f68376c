//! Scenario 3: the task awaiting the job is aborted. How a task is aborted is the runtime's
//! (smol drops it or calls `Task::cancel`, async-std calls `JoinHandle::cancel`), so the test
//! passes it in.

use std::time::Instant;

use tethered::{CancelReason, NativeError};

use crate::{Naive, PATIENCE, Probe, Runtime, bounded, report};

/// Aborting (with `abort`) the task that awaits a spinning job cancels the job with `Dropped`,
/// and its closure returns within [`RETURN_BOUND`](crate::RETURN_BOUND). `scenario` names the
/// timing line.
pub fn tethered_job<R: Runtime>(
    scenario: &'static str,
    abort: impl FnOnce(R::Task<Result<(), NativeError<()>>>) + Send + 'static,
) {
    bounded("the aborted-task scenario", PATIENCE, move || {
        let probe = Probe::new();
        let task = R::spawn({
            let probe = probe.clone();
            async move { R::spawn_native(probe.spinning_job()).await }
        });
        probe.wait_started();
        abort(task);
        report(R::NAME, scenario, [probe.cancel_to_return()]);
        assert_eq!(probe.reason(), Some(CancelReason::Dropped));
    });
}

/// Aborting (with `abort`) the task that awaits a naive blocking job leaves its closure
/// running: the leak.
pub fn naive_job<R: Runtime>(
    scenario: &'static str,
    abort: impl FnOnce(R::Task<()>) + Send + 'static,
) {
    bounded("the aborted-task scenario, naive", PATIENCE, move || {
        let naive = Naive::new();
        let job = naive.spinning_job();
        let task = R::spawn(async move { R::spawn_blocking(job).await });
        naive.wait_started(1);
        abort(task);
        let gave_up = Instant::now();
        naive.assert_leaks(R::NAME, scenario, 1, gave_up);
        naive.release();
    });
}
