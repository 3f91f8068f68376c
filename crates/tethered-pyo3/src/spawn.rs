//! [`spawn_native`] and [`spawn_native_joined`]: a native job as something asyncio awaits.

use pyo3::prelude::*;
use tethered::CancelToken;

use crate::builder::Builder;
use crate::into_py_result::IntoPyResult;

/// Runs `f` on a native thread and returns a coroutine of its outcome, bound to the running
/// event loop; cancelling the task that awaits it cancels `f`'s token.
///
/// What it returns is a coroutine written by hand (registered as a
/// `collections.abc.Coroutine`, the same type [`spawn_native_joined`] returns): `await`,
/// `asyncio.create_task`, `ensure_future`, `TaskGroup.create_task`, `gather`, `wait_for` and
/// anyio's `start_soon` take it. The job starts when this is called, not at the coroutine's
/// first step; a cancel before that step still reaches it.
///
/// - `f` runs on a new thread (use a [`Builder`] for a spawner, a scope, a name or a parent
///   token), without the GIL. It is counted in [`tethered::stats()`] until it returns.
/// - Awaiting it gives `f`'s value converted to Python ([`IntoPyResult`]); an `Err`
///   from `f` is raised as that exception; a panic in `f` raises pyo3's `PanicException` with
///   the panic message.
/// - Everything that cancels the awaiting task (`task.cancel()`,
///   `asyncio.wait_for` and `asyncio.timeout` expiring, a `TaskGroup` whose sibling failed,
///   an anyio cancel scope), cancels the token with [`CancelReason::Dropped`], or with
///   [`CancelReason::Custom`] holding the message of a `cancel(msg)` (anyio's cancel scopes
///   give one). asyncio tells the future nothing else, so a timeout is `Dropped` too.
/// - The coroutine freed before it is done (nothing references it any more, so nothing can
///   await it) cancels with `Dropped`, as dropping a Rust future does. A traceback that keeps
///   the frame holding it alive keeps the job running too.
/// - The loop closing with the job unfinished, or the interpreter exiting, cancels with
///   [`CancelReason::Shutdown`]; an outcome that arrives after its loop closed is dropped
///   quietly.
/// - The awaiting task's `CancelledError` comes at once, as asyncio's cancellation usually
///   does, while `f` returns in its own time; use [`spawn_native_joined`] for a cancellation
///   that completes only once `f` has returned.
///
/// [`CancelReason::Dropped`]: tethered::CancelReason::Dropped
/// [`CancelReason::Custom`]: tethered::CancelReason::Custom
/// [`CancelReason::Shutdown`]: tethered::CancelReason::Shutdown
///
/// # Errors
///
/// `RuntimeError` when no asyncio event loop runs on this thread (call it from a coroutine),
/// or when the spawner refused the job.
///
/// ```no_run
/// use pyo3::prelude::*;
///
/// /// `await count_up(10**12)` counts on a native thread; cancelling the awaiting task
/// /// stops it within one step.
/// #[pyfunction]
/// fn count_up(py: Python<'_>, limit: u64) -> PyResult<Bound<'_, PyAny>> {
///     tethered_pyo3::spawn_native(py, move |token| {
///         let mut n = 0u64;
///         while n < limit && !token.is_cancelled() {
///             n += 1;
///         }
///         n // a partial count when cancelled
///     })
/// }
/// ```
pub fn spawn_native<'py, F, R, M>(py: Python<'py>, f: F) -> PyResult<Bound<'py, PyAny>>
where
    F: FnOnce(CancelToken) -> R + Send + 'static,
    R: IntoPyResult<M>,
{
    Builder::new().spawn(py, f)
}

/// [`spawn_native`] whose cancellation waits for the native code: when the awaiting task is
/// cancelled, the token is cancelled at once, but the task's `CancelledError` is raised only
/// after `f` has returned (its value is then dropped), as anyio's `to_thread.run_sync` does.
///
/// Use it when the caller must know the native code is done once the cancellation completed:
/// it holds a lock, a file, a connection, or state the next request reuses. It returns the
/// same coroutine type as [`spawn_native`]; a cancel that comes before its first step (a
/// `TaskGroup` sibling failing at once) still cancels the job and waits for it. Further cancels while it waits
/// are absorbed, and `asyncio.wait_for` and `asyncio.timeout` raise their `TimeoutError` only
/// after `f` returned.
///
/// # Errors
///
/// As [`spawn_native`].
///
/// ```no_run
/// use pyo3::prelude::*;
///
/// /// Writes `chunks` chunks; a cancelled `await write_all(..)` completes only after the
/// /// file is flushed and closed.
/// #[pyfunction]
/// fn write_all(py: Python<'_>, path: String, chunks: u32) -> PyResult<Bound<'_, PyAny>> {
///     tethered_pyo3::spawn_native_joined(py, move |token| -> std::io::Result<u32> {
///         use std::io::Write;
///         let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
///         let mut written = 0;
///         while written < chunks && !token.is_cancelled() {
///             file.write_all(&[0; 4096])?;
///             written += 1;
///         }
///         file.flush()?; // done before the caller's CancelledError
///         Ok(written)
///     })
/// }
/// ```
pub fn spawn_native_joined<'py, F, R, M>(py: Python<'py>, f: F) -> PyResult<Bound<'py, PyAny>>
where
    F: FnOnce(CancelToken) -> R + Send + 'static,
    R: IntoPyResult<M>,
{
    Builder::new().spawn_joined(py, f)
}

/// Runs `f` on a native thread while the calling thread waits for it, so that Ctrl-C stops
/// a synchronous call: for a plain (not `async`) `#[pyfunction]`.
///
/// The calling thread waits with the GIL released (other Python threads run) and runs
/// Python's signal handlers every 20 ms ([`SIGNAL_CHECK`](crate::SIGNAL_CHECK)). When one raises (`KeyboardInterrupt` for
/// Ctrl-C, or whatever a handler of the application's raises), `f`'s token is cancelled with
/// `CancelReason::Custom("interrupted: KeyboardInterrupt")` and the call waits for `f` to
/// return, then raises that exception (the value is dropped). A second Ctrl-C while it waits
/// raises at once, leaving `f` to return by itself; so does the end of a grace set with
/// [`Builder::grace`]. [`Builder::timeout`] cancels with `Timeout` and raises `TimeoutError`.
/// Signals reach only the main thread: called from another thread, only the timeout stops it.
///
/// A native core crate that knows nothing of Python sees only the `CancelToken`.
///
/// # Errors
///
/// The signal handler's exception, `TimeoutError`, pyo3's `PanicException` if `f` panicked,
/// and `RuntimeError` if the job could not start or was cancelled before it ran (a parent
/// token, a scope).
///
/// ```no_run
/// use pyo3::prelude::*;
///
/// /// `count(10**12)` counts on a native thread; Ctrl-C stops it within one step and raises
/// /// `KeyboardInterrupt` once it returned.
/// #[pyfunction]
/// fn count(py: Python<'_>, limit: u64) -> PyResult<u64> {
///     tethered_pyo3::run_native(py, move |token| {
///         let mut n = 0u64;
///         while n < limit && !token.is_cancelled() {
///             n += 1;
///         }
///         n
///     })
/// }
/// ```
pub fn run_native<T, F>(py: Python<'_>, f: F) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    Builder::new().run(py, f)
}
