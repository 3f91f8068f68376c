//! [`Naive`]: blocking jobs as code without tethered writes them, to show the leak next to the
//! fix.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::bounds::{PATIENCE, RETURN_BOUND};
use crate::wait::wait_for;
use crate::work::{slices_until, spin_until};

/// Naive blocking jobs: each runs until a stop flag is set, and nothing sets it when the future
/// awaiting the job is dropped. Only the test sets it ([`Naive::release`], or dropping the
/// `Naive`, also while a failed assertion unwinds), so the leak a test shows never outlives the
/// test.
#[derive(Debug, Default)]
pub struct Naive {
    state: Arc<NaiveState>,
}

#[derive(Debug, Default)]
struct NaiveState {
    stop: AtomicBool,
    started: AtomicUsize,
    returned: AtomicUsize,
    /// Checks of the stop flag by all naive closures: grows while any of them runs.
    rounds: AtomicU64,
}

impl NaiveState {
    /// A naive closure: counted from its start to its return.
    fn run(self: Arc<Self>, work: impl FnOnce(&Self)) {
        self.started.fetch_add(1, Ordering::SeqCst);
        work(&self);
        self.returned.fetch_add(1, Ordering::SeqCst);
    }

    fn should_stop(&self) -> bool {
        self.rounds.fetch_add(1, Ordering::Relaxed);
        self.stop.load(Ordering::SeqCst)
    }
}

impl Naive {
    /// A stop flag that is not set, with no closure started.
    pub fn new() -> Self {
        Naive::default()
    }

    /// Spins until the stop flag is set (see [`spin_until`]).
    pub fn spinning_job(&self) -> impl FnOnce() + Send + 'static {
        let state = self.state.clone();
        move || state.run(|state| spin_until(|| state.should_stop()))
    }

    /// Sleeps in 1 ms steps until the stop flag is set: the shape of blocking I/O, for
    /// scenarios that run many jobs at once, like
    /// [`Probe::stepping_job`](crate::Probe::stepping_job).
    pub fn stepping_job(&self) -> impl FnOnce() + Send + 'static {
        let state = self.state.clone();
        move || state.run(|state| slices_until(|| state.should_stop()))
    }

    /// Naive closures started so far.
    pub fn started(&self) -> usize {
        self.state.started.load(Ordering::SeqCst)
    }

    /// Naive closures running now.
    pub fn running(&self) -> usize {
        self.started() - self.state.returned.load(Ordering::SeqCst)
    }

    /// Waits (at most [`PATIENCE`]) until `count` naive closures have started.
    #[track_caller]
    pub fn wait_started(&self, count: usize) {
        wait_for("naive closures to start", PATIENCE, || {
            self.started() >= count
        });
    }

    /// Asserts the leak: from the moment the awaiting side gave up (`gave_up`) until
    /// [`RETURN_BOUND`] after it, all `count` naive closures run, and at the end they still make
    /// progress, where a tethered job's closure would have returned. Prints what it saw.
    #[track_caller]
    pub fn assert_leaks(&self, runtime: &str, scenario: &str, count: usize, gave_up: Instant) {
        let watched_until = gave_up + RETURN_BOUND;
        loop {
            assert_eq!(
                self.running(),
                count,
                "{scenario}: a naive closure stopped (or never started) within {RETURN_BOUND:?} \
                 of its caller giving up; the baseline shows no leak"
            );
            if Instant::now() >= watched_until {
                break;
            }
            thread::sleep(Duration::from_millis(1));
        }
        let rounds = self.state.rounds.load(Ordering::SeqCst);
        wait_for("a leaked naive closure to make progress", PATIENCE, || {
            self.state.rounds.load(Ordering::SeqCst) > rounds
        });
        assert_eq!(
            self.running(),
            count,
            "{scenario}: the naive closures should still run {RETURN_BOUND:?} after their \
             caller gave up (the leak tethered fixes)"
        );
        eprintln!(
            "[{runtime}] {scenario}: naive: {count} closure(s) still running {:?} after the \
             caller gave up",
            gave_up.elapsed()
        );
    }

    /// Sets the stop flag without waiting: for a test that must free a runtime (whose drop
    /// waits for the naive closures) before it asserts.
    pub fn stop(&self) {
        self.state.stop.store(true, Ordering::SeqCst);
    }

    /// Sets the stop flag and waits (at most [`PATIENCE`]) until every naive closure has
    /// returned.
    #[track_caller]
    pub fn release(&self) {
        self.stop();
        wait_for(
            "the naive closures to return after their stop flag",
            PATIENCE,
            || self.running() == 0,
        );
    }
}

impl Drop for Naive {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn naive_closures_run_until_released_and_not_a_moment_less() {
        let naive = Naive::new();
        let spinning = thread::spawn(naive.spinning_job());
        let stepping = thread::spawn(naive.stepping_job());
        naive.wait_started(2);
        let gave_up = Instant::now();
        naive.assert_leaks("threads", "unit test", 2, gave_up);
        assert!(gave_up.elapsed() >= RETURN_BOUND);
        naive.release();
        assert_eq!((naive.started(), naive.running()), (2, 0));
        spinning.join().unwrap();
        stepping.join().unwrap();
    }

    #[test]
    fn dropping_the_naive_sets_its_stop_flag() {
        let naive = Naive::new();
        let job = thread::spawn(naive.stepping_job());
        naive.wait_started(1);
        drop(naive);
        job.join().unwrap();
    }
}
