//! Helpers shared by the scenario tests: probes that time a closure from its cancel to its
//! return, stop flags for the naive baselines, and bounded waits.
//!
//! Every test binary uses a different subset, hence the `dead_code` allowance.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use tethered::{CancelReason, CancelToken};

/// The behavioural bound of every scenario: a cancelled closure has returned within this long.
pub(crate) const CANCEL_TO_RETURN: Duration = Duration::from_secs(1);

/// How long a naive baseline is watched to show its leak: the same bound the tethered code
/// meets, so "still running" means "fails the bound the adapter passes".
pub(crate) const NAIVE_WATCH: Duration = CANCEL_TO_RETURN;

/// How long a naive baseline gets to finish once its stop flag is set. Generous: it only keeps
/// a broken run from hanging; a healthy one takes milliseconds.
pub(crate) const RELEASE: Duration = Duration::from_secs(10);

/// Serialises the tests of one binary, so a naive baseline spinning on a core does not skew the
/// times another test records. Poison is ignored: a failed test must not fail the others.
pub(crate) fn exclusive() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A multi-threaded runtime like a small server's: 2 workers, timer on.
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("build a tokio runtime")
}

/// What one job's closure did and when, written from the closure's thread.
#[derive(Default)]
pub(crate) struct ProbeState {
    started: AtomicBool,
    /// When the test triggered the cancel, or the earliest moment it can have happened.
    requested_at: OnceLock<Instant>,
    /// When an `on_cancel` callback saw the cancel: within the `cancel` call, after the flag
    /// was published, so possibly after a spinning closure already returned.
    cancelled_at: OnceLock<Instant>,
    returned_at: OnceLock<Instant>,
    reason: OnceLock<Option<CancelReason>>,
}

/// A shared [`ProbeState`].
#[derive(Clone, Default)]
pub(crate) struct Probe(Arc<ProbeState>);

impl Probe {
    pub(crate) fn new() -> Self {
        Probe::default()
    }

    /// Runs `body` as a tethered closure: records the start, the moment the token is cancelled
    /// (from an `on_cancel` callback, on the cancelling thread), the reason and the return.
    pub(crate) fn run_tethered<R>(&self, token: &CancelToken, body: impl FnOnce() -> R) -> R {
        self.0.started.store(true, Ordering::SeqCst);
        self.time_cancel(token);
        let value = body();
        let _ = self.0.reason.set(token.reason());
        let _ = self.0.returned_at.set(Instant::now());
        value
    }

    /// Runs `body` as a naive closure: records the start and the return.
    pub(crate) fn run_naive<R>(&self, body: impl FnOnce() -> R) -> R {
        self.0.started.store(true, Ordering::SeqCst);
        let value = body();
        let _ = self.0.returned_at.set(Instant::now());
        value
    }

    /// Detached, not guarded: a closure that sees the flag can return before the cancelling
    /// thread reaches its callbacks, and a guard dropped on return would deregister this one.
    fn time_cancel(&self, token: &CancelToken) {
        let state = self.0.clone();
        token
            .on_cancel(move |_| {
                let _ = state.cancelled_at.set(Instant::now());
            })
            .detach();
    }

    /// Records when the test triggers the cancel (or the earliest moment the cancel can
    /// happen, e.g. a timer's deadline): the start of the measured cancel-to-return time.
    pub(crate) fn mark_cancel(&self, at: Instant) {
        let _ = self.0.requested_at.set(at);
    }

    pub(crate) fn started(&self) -> bool {
        self.0.started.load(Ordering::SeqCst)
    }

    pub(crate) fn returned(&self) -> bool {
        self.0.returned_at.get().is_some()
    }

    pub(crate) fn reason(&self) -> Option<CancelReason> {
        self.0.reason.get().cloned().flatten()
    }

    /// From the cancel to the closure's return. The start is the test's mark if it made one
    /// (a lower bound of the cancel's moment, so the time is an upper bound), else the
    /// callback's time (zero if the closure saw the flag before the callback ran).
    pub(crate) fn cancel_to_return(&self) -> Option<Duration> {
        let cancelled = *self.0.requested_at.get().or(self.0.cancelled_at.get())?;
        let returned = *self.0.returned_at.get()?;
        Some(returned.saturating_duration_since(cancelled))
    }

    /// From the moment an `on_cancel` callback saw the cancel (inside the cancel call) to the
    /// closure's return; zero if the closure returned first. For cancels fired by a timer,
    /// whose exact moment the test cannot mark.
    pub(crate) fn callback_to_return(&self) -> Option<Duration> {
        let seen = *self.0.cancelled_at.get()?;
        let returned = *self.0.returned_at.get()?;
        Some(returned.saturating_duration_since(seen))
    }

    /// Blocks until the closure has returned, for at most `bound`.
    pub(crate) fn wait_returned(&self, bound: Duration) -> bool {
        wait_until(bound, || self.returned())
    }

    /// Waits (asynchronously) until the closure has started, for at most `bound`.
    pub(crate) async fn started_within(&self, bound: Duration) -> bool {
        wait_until_async(bound, || self.started()).await
    }

    /// The closure returned within [`CANCEL_TO_RETURN`] of its cancel; the measured time.
    #[track_caller]
    pub(crate) fn assert_returned_in_time(&self, what: &str) -> Duration {
        assert!(
            self.wait_returned(CANCEL_TO_RETURN + Duration::from_millis(500)),
            "{what}: the closure is still running after its cancel"
        );
        let took = self
            .cancel_to_return()
            .unwrap_or_else(|| panic!("{what}: the closure was never cancelled"));
        assert!(
            took <= CANCEL_TO_RETURN,
            "{what}: the closure returned {took:?} after its cancel"
        );
        took
    }

    /// The naive closure is still running [`NAIVE_WATCH`] after its caller gave up: the leak.
    #[track_caller]
    pub(crate) fn assert_still_running_after_watch(&self, what: &str) {
        assert!(self.started(), "{what}: the naive closure never started");
        assert!(
            !self.wait_returned(NAIVE_WATCH),
            "{what}: the naive closure stopped by itself; the baseline shows no leak"
        );
    }
}

/// A stop flag for naive closures, which nothing sets when their caller goes away. The test
/// sets it once it has seen the leak; dropping it (also while a failed assertion unwinds) sets
/// it too, so a naive closure never outlives its test.
pub(crate) struct StopFlag(Arc<AtomicBool>);

/// A naive closure's view of a [`StopFlag`].
#[derive(Clone)]
pub(crate) struct StopSignal(Arc<AtomicBool>);

impl StopFlag {
    pub(crate) fn new() -> Self {
        StopFlag(Arc::new(AtomicBool::new(false)))
    }

    pub(crate) fn signal(&self) -> StopSignal {
        StopSignal(self.0.clone())
    }

    pub(crate) fn set(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Drop for StopFlag {
    fn drop(&mut self) {
        self.set();
    }
}

impl StopSignal {
    pub(crate) fn is_set(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// Busy work until `stop()`: the CPU-burning shape of the leak.
pub(crate) fn spin_until(stop: impl Fn() -> bool) {
    while !stop() {
        for _ in 0..64 {
            std::hint::spin_loop();
        }
    }
}

/// Work in 1 ms slices (slept, to spare the shared CI cores) until `stop()`: the shape of a job
/// doing blocking I/O or waiting on a device, used where many jobs run at once.
pub(crate) fn slices_until(stop: impl Fn() -> bool) {
    while !stop() {
        thread::sleep(Duration::from_millis(1));
    }
}

/// Polls `done` every millisecond for at most `bound`; whether it became true.
pub(crate) fn wait_until(bound: Duration, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + bound;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// [`wait_until`] for async code: sleeps on tokio's timer between polls.
pub(crate) async fn wait_until_async(bound: Duration, done: impl Fn() -> bool) -> bool {
    let deadline = Instant::now() + bound;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Drops `runtime` on another thread; `Some(time the drop took)` if it returned within
/// `watch`, `None` if it still blocks then. The thread is handed back so a hung drop can be
/// released and joined.
pub(crate) fn drop_watched(
    runtime: tokio::runtime::Runtime,
    watch: Duration,
) -> (Option<Duration>, RuntimeDrop) {
    let (done_tx, done) = mpsc::channel();
    let dropper = thread::Builder::new()
        .name("runtime-dropper".into())
        .spawn(move || {
            let start = Instant::now();
            drop(runtime);
            let _ = done_tx.send(start.elapsed());
        })
        .expect("spawn the runtime-dropper thread");
    let took = done.recv_timeout(watch).ok();
    (
        took,
        RuntimeDrop {
            done,
            dropper,
            finished: took.is_some(),
        },
    )
}

/// A runtime drop running on its own thread (see [`drop_watched`]).
pub(crate) struct RuntimeDrop {
    done: mpsc::Receiver<Duration>,
    dropper: thread::JoinHandle<()>,
    finished: bool,
}

impl RuntimeDrop {
    /// Waits up to `bound` for the drop to return; joins the thread if it did.
    pub(crate) fn finish_within(self, bound: Duration) -> bool {
        let finished = self.finished || self.done.recv_timeout(bound).is_ok();
        if finished {
            self.dropper.join().expect("the runtime drop panicked");
        }
        finished
    }
}

/// Median and worst of `times`, printed for `--nocapture`.
pub(crate) fn report(scenario: &str, times: &mut [Duration]) -> (Duration, Duration) {
    assert!(!times.is_empty(), "{scenario}: nothing was measured");
    times.sort();
    let median = times[times.len() / 2];
    let worst = times[times.len() - 1];
    eprintln!(
        "[tethered-tokio] {scenario}: cancel-to-return over {} closure(s): median {median:?}, worst {worst:?}",
        times.len()
    );
    (median, worst)
}
