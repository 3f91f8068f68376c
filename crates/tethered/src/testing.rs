//! Helpers for tests that must prove they leave no native job behind.
//!
//! Put [`assert_all_returned`] at the end of a test: it waits (up to a timeout) until no
//! closure of any job is running or queued in the process, and fails with the counts if some
//! are. The counters are process-wide, so in a test binary whose tests run in parallel, call it
//! where no other test has jobs in flight (a test binary of its own, or a serialised group), or
//! spawn your jobs in a [`NativeScope`] and end with [`assert_scope_returned`], which looks at
//! that scope's own counts only, so tests (and libraries) in one process need not take turns.

use std::fmt;
use std::time::{Duration, Instant};

use crate::scope::NativeScope;
use crate::stats::stats;

/// Waits until no job closure is running or queued anywhere in the process, for at most
/// `timeout`.
///
/// # Errors
///
/// [`StillRunning`], with the counts, if closures still ran when `timeout` passed.
///
/// ```
/// use std::time::Duration;
/// let job = tethered::AbortableNative::spawn(|token| token.wait());
/// drop(job); // cancels it
/// tethered::testing::wait_all_returned(Duration::from_secs(10))?;
/// # Ok::<(), tethered::testing::StillRunning>(())
/// ```
pub fn wait_all_returned(timeout: Duration) -> Result<(), StillRunning> {
    wait_returned(timeout, || {
        let now = stats();
        (now.running, now.queued, now.detached)
    })
}

/// [`wait_all_returned`] for the jobs of one scope: waits until none of `scope`'s closures is
/// running or queued, whatever other jobs the process has.
///
/// # Errors
///
/// [`StillRunning`], with the scope's counts, if its closures still ran when `timeout`
/// passed.
///
/// ```
/// use std::time::Duration;
/// use tethered::NativeScope;
///
/// let scope = NativeScope::new();
/// drop(scope.spawn(|token| token.wait())?); // cancels it
/// tethered::testing::wait_scope_returned(&scope, Duration::from_secs(10))?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn wait_scope_returned(scope: &NativeScope, timeout: Duration) -> Result<(), StillRunning> {
    wait_returned(timeout, || {
        let now = scope.stats();
        (now.running, now.queued, now.detached)
    })
}

/// [`assert_all_returned`] for the jobs of one scope (see [`wait_scope_returned`]).
///
/// # Panics
///
/// If the scope's closures still run when `timeout` passes: the leak the test looks for.
///
/// ```
/// use std::time::Duration;
/// use tethered::NativeScope;
///
/// let scope = NativeScope::new();
/// scope.spawn(|_| ())?.detach();
/// tethered::testing::assert_scope_returned(&scope, Duration::from_secs(10));
/// # Ok::<(), tethered::SpawnError>(())
/// ```
#[track_caller]
pub fn assert_scope_returned(scope: &NativeScope, timeout: Duration) {
    if let Err(still) = wait_scope_returned(scope, timeout) {
        panic!("{still}");
    }
}

/// Waits until `counts` (running, queued, detached) has nothing running or queued.
fn wait_returned(
    timeout: Duration,
    counts: impl Fn() -> (usize, usize, usize),
) -> Result<(), StillRunning> {
    let started = Instant::now();
    loop {
        let (running, queued, detached) = counts();
        if running == 0 && queued == 0 {
            return Ok(());
        }
        let waited = started.elapsed();
        if waited >= timeout {
            return Err(StillRunning {
                running,
                queued,
                detached,
                waited,
            });
        }
        std::thread::sleep(Duration::from_millis(1).min(timeout - waited));
    }
}

/// Panics unless every job closure in the process has returned within `timeout`: the assertion
/// to end a test with, to prove it leaks no native job.
///
/// # Panics
///
/// If closures still run when `timeout` passes: the leak the test looks for.
///
/// ```
/// use std::time::Duration;
/// let job = tethered::AbortableNative::spawn(|token| token.wait());
/// drop(job);
/// tethered::testing::assert_all_returned(Duration::from_secs(10));
/// ```
#[track_caller]
pub fn assert_all_returned(timeout: Duration) {
    if let Err(still) = wait_all_returned(timeout) {
        panic!("{still}");
    }
}

/// Jobs were still running or queued when [`wait_all_returned`] (or
/// [`wait_scope_returned`]) gave up. Idle work (a pool's idle workers) is not waited for.
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct StillRunning {
    /// Closures (or external work) still running when it gave up.
    pub running: usize,
    /// Jobs still queued when it gave up.
    pub queued: usize,
    /// Of those, jobs detached (let go of, abandoned, or left by a shutdown).
    pub detached: usize,
    /// How long it waited.
    pub waited: Duration,
}

impl fmt::Display for StillRunning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "native jobs leaked: {} closure(s) still running and {} queued after {:?} \
             ({} of them detached); a closure that ignores its token, or a job that was \
             never cancelled, is still holding a thread",
            self.running, self.queued, self.waited, self.detached
        )
    }
}

impl std::error::Error for StillRunning {}
