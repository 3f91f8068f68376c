//! Native jobs for the pytest suite: each returns an awaitable from `tethered_pyo3`.

use std::sync::LazyLock;
use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tethered::{
    CancelReason, CancelSource, CancelToken, Cause, JobOptions, NativeScope, ThreadSpawner,
};

use crate::probe::Probe;

/// `await add(a, b)`: the sum, computed on a native thread.
#[pyfunction]
pub(crate) fn add(py: Python<'_>, a: i64, b: i64) -> PyResult<Bound<'_, PyAny>> {
    tethered_pyo3::spawn_native(py, move |_token| a + b)
}

/// `await echo(value)`: the very object, handed through a native thread.
#[pyfunction]
pub(crate) fn echo<'py>(py: Python<'py>, value: Py<PyAny>) -> PyResult<Bound<'py, PyAny>> {
    tethered_pyo3::spawn_native(py, move |_token| value)
}

/// `await fail(message)` raises `ValueError(message)`.
#[pyfunction]
pub(crate) fn fail(py: Python<'_>, message: String) -> PyResult<Bound<'_, PyAny>> {
    tethered_pyo3::spawn_native(py, move |_token| -> PyResult<()> {
        Err(PyValueError::new_err(message))
    })
}

/// `await stop_iteration(message)`: the closure returns `Err(StopIteration(message))`, as a
/// native "next item" that has none does.
#[pyfunction]
pub(crate) fn stop_iteration(py: Python<'_>, message: String) -> PyResult<Bound<'_, PyAny>> {
    tethered_pyo3::spawn_native(py, move |_token| -> PyResult<()> {
        Err(pyo3::exceptions::PyStopIteration::new_err(message))
    })
}

/// `await panic(message)`: the closure panics with `message`.
#[pyfunction]
pub(crate) fn panic(py: Python<'_>, message: String) -> PyResult<Bound<'_, PyAny>> {
    tethered_pyo3::spawn_native(py, move |_token| -> u32 { std::panic::panic_any(message) })
}

/// Spins (one atomic load per step) until cancelled; returns the steps it made.
fn spin_until_cancelled(probe: &Probe, token: &CancelToken) -> u64 {
    let mut steps = 0;
    while !token.is_cancelled() {
        probe.step();
        steps += 1;
    }
    steps
}

/// `await spin(probe)`: busy until cancelled.
#[pyfunction]
pub(crate) fn spin(py: Python<'_>, probe: Probe) -> PyResult<Bound<'_, PyAny>> {
    tethered_pyo3::spawn_native(py, move |token| {
        probe.start(&token);
        let steps = spin_until_cancelled(&probe, &token);
        probe.finish(&token);
        steps
    })
}

/// Busy until cancelled, then a clean-up that lasts until the test calls `probe.release()`.
fn spin_then_linger(probe: &Probe, token: &CancelToken) -> u64 {
    probe.start(token);
    let steps = spin_until_cancelled(probe, token);
    probe.wait_released(Duration::from_secs(60));
    probe.finish(token);
    steps
}

/// `await spin_lingering(probe, grace=None)`: [`spin`], with a clean-up after the cancel that
/// lasts until `probe.release()`. The awaiting task's cancellation waits for the clean-up, or
/// for `grace` seconds at most (zero: not at all).
#[pyfunction]
#[pyo3(signature = (probe, grace = None))]
pub(crate) fn spin_lingering(
    py: Python<'_>,
    probe: Probe,
    grace: Option<f64>,
) -> PyResult<Bound<'_, PyAny>> {
    let mut options = JobOptions::new().name("spin-lingering");
    if let Some(grace) = grace {
        options = options.grace(Duration::from_secs_f64(grace));
    }
    tethered_pyo3::spawn_native_with(py, options, move |token| spin_then_linger(&probe, &token))
}

/// `await spin_for(probe, timeout)`: [`spin`] with a deadline of its own: it raises
/// `TimeoutError` once `timeout` seconds have passed and the closure returned.
#[pyfunction]
pub(crate) fn spin_for(py: Python<'_>, probe: Probe, timeout: f64) -> PyResult<Bound<'_, PyAny>> {
    let options = JobOptions::new().timeout(Duration::from_secs_f64(timeout));
    tethered_pyo3::spawn_native_with(py, options, move |token| {
        probe.start(&token);
        let steps = spin_until_cancelled(&probe, &token);
        probe.finish(&token);
        steps
    })
}

/// `await idle(probe)`: sleeps in 50 ms steps on its token until cancelled: cheap enough to
/// run a thousand at once.
#[pyfunction]
pub(crate) fn idle(py: Python<'_>, probe: Probe) -> PyResult<Bound<'_, PyAny>> {
    tethered_pyo3::spawn_native(py, move |token| {
        probe.start(&token);
        while token.wait_timeout(Duration::from_millis(50)).is_none() {
            probe.step();
        }
        probe.finish(&token);
    })
}

/// `await sleep(seconds, value)`: sleeps without looking at its token, then returns `value`.
#[pyfunction]
pub(crate) fn sleep(py: Python<'_>, seconds: f64, value: Py<PyAny>) -> PyResult<Bound<'_, PyAny>> {
    tethered_pyo3::spawn_native(py, move |_token| {
        std::thread::sleep(Duration::from_secs_f64(seconds));
        value
    })
}

/// `await ignore_token(probe, seconds)`: runs `seconds` without looking at its token, as
/// native code that has no check would.
#[pyfunction]
pub(crate) fn ignore_token(
    py: Python<'_>,
    probe: Probe,
    seconds: f64,
) -> PyResult<Bound<'_, PyAny>> {
    tethered_pyo3::spawn_native(py, move |token| {
        probe.start(&token);
        std::thread::sleep(Duration::from_secs_f64(seconds));
        probe.finish(&token);
    })
}

/// `await named(name, seconds, honour)`: `seconds` of work in a job named `name`; it stops at
/// a cancel if `honour`, and otherwise runs on as native code without a check would.
#[pyfunction]
pub(crate) fn named(
    py: Python<'_>,
    name: String,
    seconds: f64,
    honour: bool,
) -> PyResult<Bound<'_, PyAny>> {
    let until = std::time::Instant::now() + Duration::from_secs_f64(seconds);
    tethered_pyo3::spawn_native_with(py, JobOptions::new().name(name), move |token| {
        while std::time::Instant::now() < until && !(honour && token.is_cancelled()) {
            std::thread::sleep(Duration::from_millis(1));
        }
    })
}

/// A loop of `name` that writes `"running"` to `record` as it starts, runs until its token is
/// cancelled or `seconds` passed, then writes what stopped it there (`"Dropped|ray.cancel"`,
/// `"returned"`) before it returns.
fn recorded(
    name: &str,
    seconds: f64,
    record: String,
) -> (
    JobOptions,
    impl FnOnce(tethered_pyo3::CancelToken) -> u64 + Send + 'static,
) {
    let until = std::time::Instant::now() + Duration::from_secs_f64(seconds);
    let work = move |token: tethered_pyo3::CancelToken| {
        let _ = std::fs::write(&record, "running");
        let mut steps = 0u64;
        while std::time::Instant::now() < until && !token.is_cancelled() {
            std::thread::sleep(Duration::from_millis(1));
            steps += 1;
        }
        let stop = match token.reason() {
            Some(reason) => format!(
                "{reason:?}|{}",
                token
                    .cause()
                    .map(|cause| cause.to_string())
                    .unwrap_or_default()
            ),
            None => "returned".to_owned(),
        };
        let _ = std::fs::write(&record, stop);
        steps
    };
    (JobOptions::new().name(name), work)
}

/// `spin_recorded(name, seconds, record)`: a synchronous call (`run_native`) whose job, named
/// `name` (its thread too), runs until it is cancelled or `seconds` passed; it writes
/// `"running"` to the file `record` as it starts and what stopped it as it returns. The steps
/// it took.
#[pyfunction]
pub(crate) fn spin_recorded(
    py: Python<'_>,
    name: String,
    seconds: f64,
    record: String,
) -> PyResult<u64> {
    let (options, work) = recorded(&name, seconds, record);
    tethered_pyo3::run_native_with(py, options, work)
}

/// `await spin_recorded_async(name, seconds, record)`: `spin_recorded` as a coroutine
/// (`spawn_native`).
#[pyfunction]
pub(crate) fn spin_recorded_async(
    py: Python<'_>,
    name: String,
    seconds: f64,
    record: String,
) -> PyResult<Bound<'_, PyAny>> {
    let (options, work) = recorded(&name, seconds, record);
    tethered_pyo3::spawn_native_with(py, options, work)
}

/// `naive_sleep(seconds)`: a plain pyo3 call, without tethered, that releases the GIL and
/// sleeps `seconds` on the calling thread: native work nothing can stop.
#[pyfunction]
pub(crate) fn naive_sleep(py: Python<'_>, seconds: f64) {
    py.detach(|| std::thread::sleep(Duration::from_secs_f64(seconds)));
}

/// `await thread_name()`: the name of the thread the job ran on (named with the builder).
#[pyfunction]
pub(crate) fn thread_name(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    tethered_pyo3::spawn_native_with(py, JobOptions::new().name("example-job"), |_token| {
        std::thread::current().name().map(str::to_owned)
    })
}

static POOL: LazyLock<ThreadSpawner> = LazyLock::new(|| ThreadSpawner::new().name("example-pool"));

/// `await pool_thread_name()`: a job run by a spawner of the module's: its thread's name.
#[pyfunction]
pub(crate) fn pool_thread_name(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    tethered_pyo3::spawn_native_with(py, JobOptions::new().on(POOL.clone()), |_token| {
        std::thread::current().name().map(str::to_owned)
    })
}

/// A cancel source Python holds: jobs spawned `child_of` it stop when it is cancelled.
#[pyclass(frozen, module = "tethered_example")]
pub(crate) struct Parent {
    source: CancelSource,
}

#[pymethods]
impl Parent {
    #[new]
    fn new() -> Self {
        Parent {
            source: CancelSource::new(),
        }
    }

    /// Cancels every job spawned as a child, with `CancelReason::Requested` and `message` as
    /// the cause.
    fn cancel(&self, message: String) {
        self.source
            .cancel_with_cause(CancelReason::Requested, Cause::msg(message));
    }
}

/// `await spin_child_of(parent, probe)`: [`spin`] as a child of `parent`; returns its steps
/// when the parent is cancelled.
#[pyfunction]
pub(crate) fn spin_child_of<'py>(
    py: Python<'py>,
    parent: &Bound<'py, Parent>,
    probe: Probe,
) -> PyResult<Bound<'py, PyAny>> {
    let parent = parent.get().source.token();
    let options = JobOptions::new().child_of(&parent);
    tethered_pyo3::spawn_native_with(py, options, move |token| {
        probe.start(&token);
        let steps = spin_until_cancelled(&probe, &token);
        probe.finish(&token);
        steps
    })
}

static SCOPE: LazyLock<NativeScope> = LazyLock::new(|| {
    NativeScope::new().with_max_running(std::num::NonZeroUsize::new(2).expect("2 is not zero"))
});

/// `await spin_in_scope(probe)`: [`spin`] in the module's scope, which runs two at a time.
#[pyfunction]
pub(crate) fn spin_in_scope(py: Python<'_>, probe: Probe) -> PyResult<Bound<'_, PyAny>> {
    tethered_pyo3::spawn_native_with(py, JobOptions::new().in_scope(&SCOPE), move |token| {
        probe.start(&token);
        let steps = spin_until_cancelled(&probe, &token);
        probe.finish(&token);
        steps
    })
}

/// Cancels every job of the module's scope with `CancelReason::Shutdown`.
#[pyfunction]
pub(crate) fn cancel_scope() {
    SCOPE.cancel_all(CancelReason::Shutdown);
}

/// `tethered::stats()` as a dict.
#[pyfunction]
pub(crate) fn stats(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let stats = tethered::stats();
    let dict = pyo3::types::PyDict::new(py);
    dict.set_item("running", stats.running)?;
    dict.set_item("queued", stats.queued)?;
    dict.set_item("detached", stats.detached)?;
    dict.set_item("spawned", stats.spawned)?;
    dict.set_item("cancelled", stats.cancelled)?;
    dict.set_item("panicked", stats.panicked)?;
    Ok(dict)
}

/// Keeps every task it is given and never runs one: jobs on it stay queued until cancelled.
struct NeverRuns;

impl tethered::Spawner for NeverRuns {
    fn spawn(&self, task: tethered::Runnable) -> Result<(), tethered::SpawnError> {
        static KEPT: std::sync::Mutex<Vec<tethered::Runnable>> = std::sync::Mutex::new(Vec::new());
        KEPT.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(task);
        Ok(())
    }
}

/// `await queued_child_of(parent)`: a job that never starts; a cancel of `parent` finishes it,
/// on the thread that cancels.
#[pyfunction]
pub(crate) fn queued_child_of<'py>(
    py: Python<'py>,
    parent: &Bound<'py, Parent>,
) -> PyResult<Bound<'py, PyAny>> {
    let parent = parent.get().source.token();
    let options = JobOptions::new().child_of(&parent).on(NeverRuns);
    tethered_pyo3::spawn_native_with(py, options, move |_token| 0u32)
}

/// A lock of the application's, held by a thread of its own while it cancels.
static APP_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Starts a Rust thread that takes [`APP_LOCK`], says so, cancels `parent` while holding it
/// once told to go, then lets go. Returns the "go" signal's sender side as a function.
#[pyfunction]
pub(crate) fn cancel_on_a_rust_thread_holding_a_lock(parent: &Bound<'_, Parent>) -> CancelHolding {
    let source = parent.get().source.clone();
    let (locked_tx, locked) = std::sync::mpsc::channel();
    let (go, go_rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        let _held = APP_LOCK
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = locked_tx.send(());
        let _ = go_rx.recv();
        source.cancel_with_cause(
            CancelReason::Requested,
            Cause::msg("cancelled on a Rust thread"),
        );
    });
    let _ = locked.recv();
    CancelHolding { go: Some(go) }
}

/// The "go" of [`cancel_on_a_rust_thread_holding_a_lock`].
#[pyclass]
pub(crate) struct CancelHolding {
    go: Option<std::sync::mpsc::Sender<()>>,
}

#[pymethods]
impl CancelHolding {
    /// Tells the thread to cancel, then takes [`APP_LOCK`] with the GIL held, as Python code
    /// calling into a library that guards its state with that lock would. `True` if the lock
    /// came within `timeout` seconds; `False` if the cancelling thread kept it (it waits for
    /// the GIL this thread holds: a deadlock, broken here by the timeout).
    fn cancel_then_take_the_lock(&mut self, timeout: f64) -> bool {
        if let Some(go) = self.go.take() {
            let _ = go.send(());
        }
        let deadline = std::time::Instant::now() + Duration::from_secs_f64(timeout);
        loop {
            if APP_LOCK.try_lock().is_ok() {
                return true;
            }
            if std::time::Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// `spin_sync(probe, timeout=None, grace=None)`: [`spin`] as a synchronous call, which Ctrl-C
/// (or the timeout) stops: it returns the steps it made, or raises.
#[pyfunction]
#[pyo3(signature = (probe, timeout = None, grace = None))]
pub(crate) fn spin_sync(
    py: Python<'_>,
    probe: Probe,
    timeout: Option<f64>,
    grace: Option<f64>,
) -> PyResult<u64> {
    let mut options = JobOptions::new().name("spin-sync");
    if let Some(timeout) = timeout {
        options = options.timeout(Duration::from_secs_f64(timeout));
    }
    if let Some(grace) = grace {
        options = options.grace(Duration::from_secs_f64(grace));
    }
    tethered_pyo3::run_native_with(py, options, move |token| {
        probe.start(&token);
        let steps = spin_until_cancelled(&probe, &token);
        probe.finish(&token);
        steps
    })
}

/// `ignore_token_sync(probe, seconds, grace)`: a synchronous call that runs `seconds` without
/// looking at its token, as native code with no check does.
#[pyfunction]
pub(crate) fn ignore_token_sync(
    py: Python<'_>,
    probe: Probe,
    seconds: f64,
    grace: f64,
) -> PyResult<()> {
    let options = JobOptions::new().grace(Duration::from_secs_f64(grace));
    tethered_pyo3::run_native_with(py, options, move |token| {
        probe.start(&token);
        std::thread::sleep(Duration::from_secs_f64(seconds));
        probe.finish(&token);
    })
}
