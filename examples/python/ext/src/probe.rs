//! [`Probe`]: what a test sees of one native job: its steps, whether it runs, when and why it
//! stopped.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use tethered::{CancelReason, CancelToken};

/// Shared between a Python test and the native closure it watches.
///
/// Times are in `time.monotonic()` seconds, so a test can subtract the moment it cancelled.
#[pyclass(frozen, from_py_object, module = "tethered_example")]
#[derive(Clone)]
pub(crate) struct Probe {
    state: Arc<State>,
}

struct State {
    /// `time.monotonic()` and `Instant::now()` read together: both are CLOCK_MONOTONIC.
    epoch: (f64, Instant),
    progress: Mutex<Progress>,
    changed: Condvar,
    steps: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct Progress {
    started: bool,
    released: bool,
    returned_at: Option<Instant>,
    reason: Option<CancelReason>,
    cause: Option<String>,
}

impl Probe {
    fn lock(&self) -> MutexGuard<'_, Progress> {
        self.state
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn update(&self, f: impl FnOnce(&mut Progress)) {
        f(&mut self.lock());
        self.state.changed.notify_all();
    }

    /// Call first thing in the closure.
    pub(crate) fn start(&self, _token: &CancelToken) {
        self.update(|p| p.started = true);
    }

    /// One step of work.
    pub(crate) fn step(&self) {
        self.state
            .steps
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Blocks until the test calls `release()` (at most `limit`): clean-up that takes as long
    /// as the test says.
    pub(crate) fn wait_released(&self, limit: Duration) {
        let progress = self.lock();
        let _ = self
            .state
            .changed
            .wait_timeout_while(progress, limit, |p| !p.released);
    }

    /// Call last thing in the closure.
    pub(crate) fn finish(&self, token: &CancelToken) {
        let reason = token.reason();
        let cause = token.cause().map(|cause| cause.to_string());
        self.update(|p| {
            p.reason = reason;
            p.cause = cause;
            p.returned_at = Some(Instant::now());
        });
    }

    fn monotonic(&self, at: Option<Instant>) -> Option<f64> {
        let (base, epoch) = self.state.epoch;
        at.map(|at| base + at.duration_since(epoch).as_secs_f64())
    }

    fn wait_until(&self, py: Python<'_>, timeout: f64, done: fn(&Progress) -> bool) -> bool {
        let timeout = Duration::from_secs_f64(timeout.max(0.0));
        py.detach(|| {
            let progress = self.lock();
            let (progress, _) = self
                .state
                .changed
                .wait_timeout_while(progress, timeout, |p| !done(p))
                .unwrap_or_else(PoisonError::into_inner);
            done(&progress)
        })
    }
}

#[pymethods]
impl Probe {
    #[new]
    fn new(py: Python<'_>) -> PyResult<Self> {
        let base: f64 = py.import("time")?.call_method0("monotonic")?.extract()?;
        Ok(Probe {
            state: Arc::new(State {
                epoch: (base, Instant::now()),
                progress: Mutex::new(Progress::default()),
                changed: Condvar::new(),
                steps: std::sync::atomic::AtomicU64::new(0),
            }),
        })
    }

    /// Steps done so far.
    #[getter]
    fn steps(&self) -> u64 {
        self.state.steps.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The closure has started and not returned.
    #[getter]
    fn running(&self) -> bool {
        let p = self.lock();
        p.started && p.returned_at.is_none()
    }

    /// The closure has returned.
    #[getter]
    fn returned(&self) -> bool {
        self.lock().returned_at.is_some()
    }

    /// Why the token was cancelled, as the closure saw it when it returned: `"Dropped"`,
    /// `"Timeout"`, `"Shutdown"`...; `None` if it was not cancelled.
    #[getter]
    fn reason(&self) -> Option<String> {
        self.lock().reason.map(|reason| format!("{reason:?}"))
    }

    /// The cause beside the reason, as the closure saw it when it returned: a `cancel(msg)`
    /// message, `"interrupted: KeyboardInterrupt"`...; `None` if there was none.
    #[getter]
    fn cause(&self) -> Option<String> {
        self.lock().cause.clone()
    }

    /// When the closure returned (`time.monotonic()` seconds).
    #[getter]
    fn returned_at(&self) -> Option<f64> {
        let at = self.lock().returned_at;
        self.monotonic(at)
    }

    /// Lets a closure blocked in its clean-up return.
    fn release(&self) {
        self.update(|p| p.released = true);
    }

    /// Blocks (without the GIL) until the closure started, at most `timeout` seconds.
    fn wait_started(&self, py: Python<'_>, timeout: f64) -> bool {
        self.wait_until(py, timeout, |p| p.started)
    }

    /// Blocks (without the GIL) until the closure returned, at most `timeout` seconds.
    fn wait_returned(&self, py: Python<'_>, timeout: f64) -> bool {
        self.wait_until(py, timeout, |p| p.returned_at.is_some())
    }
}
