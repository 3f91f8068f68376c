//! Shared by the scenario tests: a probe that times a tethered job from its cancel to its
//! closure's return, naive jobs that spin on a stop flag nobody sets on drop, and bounded
//! waits so that every test ends.

// Each test binary uses a different part of this module.
#![allow(dead_code)]

use std::panic;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use tethered::{AbortableNative, CancelReason, CancelToken};

/// The runtime these tests run on, for the timing lines they print.
pub(crate) const RUNTIME: &str = "async-std";

/// Issue 3's bound: a cancelled job's closure has returned within this time of the cancel.
/// Generous on purpose: the measured times are micro- to milliseconds, and the bound is there to
/// tell "returns" from "runs on", not to benchmark a shared machine.
pub(crate) const RETURN_BOUND: Duration = Duration::from_secs(1);

/// How long a test waits for anything that should take milliseconds before it fails. Every
/// wait is bounded by it, so a broken behaviour fails a test instead of hanging the suite.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// Times one tethered job: when its token was cancelled and when its closure returned.
#[derive(Debug, Default)]
pub(crate) struct Probe {
    started: AtomicBool,
    cancelled_at: OnceLock<Instant>,
    returned_at: OnceLock<Instant>,
    seen: OnceLock<Option<CancelReason>>,
}

impl Probe {
    pub(crate) fn new() -> Arc<Probe> {
        Arc::new(Probe::default())
    }

    /// The job: spins on `token.is_cancelled()` and returns once it sees the cancel.
    pub(crate) fn spinning_job(self: &Arc<Self>) -> impl FnOnce(CancelToken) + Send + 'static {
        let probe = self.clone();
        move |token| {
            probe.started.store(true, Ordering::SeqCst);
            while !token.is_cancelled() {
                std::hint::spin_loop();
            }
            probe.returned(&token);
        }
    }

    /// Blocking work in 1 ms steps, checking the token between steps: for tests that run many
    /// jobs at once, where 50 busy threads on a small machine would time the OS scheduler.
    pub(crate) fn stepping_job(self: &Arc<Self>) -> impl FnOnce(CancelToken) + Send + 'static {
        let probe = self.clone();
        move |token| {
            probe.started.store(true, Ordering::SeqCst);
            while !token.is_cancelled() {
                thread::sleep(Duration::from_millis(1));
            }
            probe.returned(&token);
        }
    }

    fn returned(&self, token: &CancelToken) {
        // The reason first: whoever sees `returned_at` may read it.
        let _ = self.seen.set(token.reason());
        let _ = self.returned_at.set(Instant::now());
    }

    /// Records when `job`'s token is cancelled: the callback runs inside the cancel.
    pub(crate) fn watch<T>(self: &Arc<Self>, job: &AbortableNative<T>) {
        let probe = self.clone();
        job.token()
            .on_cancel(move |_| {
                let _ = probe.cancelled_at.set(Instant::now());
            })
            .detach();
    }

    pub(crate) fn has_started(&self) -> bool {
        self.started.load(Ordering::SeqCst)
    }

    pub(crate) fn wait_started(&self) {
        wait_for("the job's closure to start", PATIENCE, || {
            self.has_started()
        });
    }

    /// Waits for the closure to return and gives the time from the cancel to its return.
    pub(crate) fn cancel_to_return(&self) -> Duration {
        wait_for("the cancelled job's closure to return", PATIENCE, || {
            self.returned_at.get().is_some()
        });
        // The cancelling thread runs the callback after publishing the cancel, so a closure
        // that saw the flag can return before the timestamp exists.
        wait_for("the cancel callback to record the cancel", PATIENCE, || {
            self.cancelled_at.get().is_some()
        });
        let cancelled = self.cancelled_at.get().expect("waited for above");
        self.returned_at
            .get()
            .expect("waited for above")
            .saturating_duration_since(*cancelled)
    }

    /// Waits for the closure to return and gives the moment it did.
    pub(crate) fn returned_at(&self) -> Instant {
        wait_for("the job's closure to return", PATIENCE, || {
            self.returned_at.get().is_some()
        });
        *self.returned_at.get().expect("waited for above")
    }

    /// The reason the closure saw when it returned.
    pub(crate) fn seen_reason(&self) -> Option<CancelReason> {
        self.seen.get().cloned().flatten()
    }
}

/// Naive blocking jobs, as code without tethered writes them: each runs until a stop flag is
/// set, and nothing sets it when the future awaiting the job is dropped. Only the test sets it
/// ([`Naive::release`], or dropping the `Naive`, also when a test fails), so the leak a test
/// shows never outlives the test.
#[derive(Debug)]
pub(crate) struct Naive {
    state: Arc<NaiveState>,
}

#[derive(Debug, Default)]
struct NaiveState {
    stop: AtomicBool,
    started: AtomicUsize,
    returned: AtomicUsize,
    /// Loop rounds of all naive closures: grows while any of them runs.
    rounds: AtomicU64,
}

impl Naive {
    pub(crate) fn new() -> Naive {
        Naive {
            state: Arc::default(),
        }
    }

    /// Spins on the stop flag.
    pub(crate) fn spinning_job(&self) -> impl FnOnce() + Send + 'static {
        self.job(None)
    }

    /// Sleeps in 1 ms steps until the stop flag is set (see [`Probe::stepping_job`]).
    pub(crate) fn stepping_job(&self) -> impl FnOnce() + Send + 'static {
        self.job(Some(Duration::from_millis(1)))
    }

    fn job(&self, step: Option<Duration>) -> impl FnOnce() + Send + 'static {
        let state = self.state.clone();
        move || {
            state.started.fetch_add(1, Ordering::SeqCst);
            while !state.stop.load(Ordering::SeqCst) {
                state.rounds.fetch_add(1, Ordering::Relaxed);
                match step {
                    Some(step) => thread::sleep(step),
                    None => std::hint::spin_loop(),
                }
            }
            state.returned.fetch_add(1, Ordering::SeqCst);
        }
    }

    pub(crate) fn started(&self) -> usize {
        self.state.started.load(Ordering::SeqCst)
    }

    /// Naive closures running now.
    pub(crate) fn running(&self) -> usize {
        self.started() - self.state.returned.load(Ordering::SeqCst)
    }

    pub(crate) fn wait_started(&self, count: usize) {
        wait_for("naive closures to start", PATIENCE, || {
            self.started() >= count
        });
    }

    /// Asserts the leak: [`RETURN_BOUND`] after the awaiting side gave up at `gave_up`, all
    /// `count` naive closures still run and still make progress, where a tethered job's closure
    /// would have returned.
    pub(crate) fn assert_leaks(&self, count: usize, gave_up: Instant, scenario: &str) {
        thread::sleep((gave_up + RETURN_BOUND).saturating_duration_since(Instant::now()));
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
            "[{RUNTIME}] {scenario}: naive: {count} closure(s) still running {:?} after the \
             caller gave up",
            gave_up.elapsed()
        );
    }

    /// Sets the stop flag and waits until every naive closure has returned.
    pub(crate) fn release(&self) {
        self.state.stop.store(true, Ordering::SeqCst);
        wait_for(
            "the naive closures to return after their stop flag",
            PATIENCE,
            || self.running() == 0,
        );
    }
}

impl Drop for Naive {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
    }
}

/// Runs `f` on a thread of its own and waits at most `limit` for it: the watchdog that keeps a
/// hang (say, a runtime drop that never returns) from stalling the suite. On a timeout the test
/// fails and the thread is left behind; a panic in `f` is the test's panic.
pub(crate) fn bounded<R, F>(what: &str, limit: Duration, f: F) -> R
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    let (done, result) = mpsc::channel();
    let worker = thread::Builder::new()
        .name(what.to_owned())
        .spawn(move || {
            let _ = done.send(f());
        })
        .expect("start the watched thread");
    match result.recv_timeout(limit) {
        Ok(value) => {
            let _ = worker.join();
            value
        }
        Err(mpsc::RecvTimeoutError::Timeout) => {
            panic!("watchdog: {what} did not finish within {limit:?}")
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match worker.join() {
            Err(payload) => panic::resume_unwind(payload),
            Ok(()) => unreachable!("the worker sends its result before it ends"),
        },
    }
}

/// Polls `done` every millisecond; fails the test if it is still false after `limit`.
pub(crate) fn wait_for(what: &str, limit: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(
            Instant::now() < deadline,
            "gave up after {limit:?} waiting for {what}"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// Prints the cancel-to-return times of one scenario and checks them against [`RETURN_BOUND`].
pub(crate) fn report(scenario: &str, mut samples: Vec<Duration>) {
    assert!(!samples.is_empty(), "{scenario}: no samples");
    samples.sort();
    let median = samples[samples.len() / 2];
    let worst = samples[samples.len() - 1];
    eprintln!(
        "[{RUNTIME}] {scenario}: cancel-to-return over {} job(s): median {median:?}, worst {worst:?}",
        samples.len()
    );
    assert!(
        worst <= RETURN_BOUND,
        "{scenario}: a closure returned {worst:?} after its cancel (bound {RETURN_BOUND:?})"
    );
}
