//! [`spawn_native`] and [`spawn_native_with`]: a native job as something asyncio or trio
//! awaits.

use pyo3::prelude::*;
use tethered::{CancelToken, JobOptions, Placement};

use crate::call::call;
use crate::into_py_result::IntoPyResult;

/// Runs `f` on a native thread and returns a coroutine of its outcome, bound to the running
/// event loop (or trio run); cancelling the task that awaits it cancels `f`'s token. It is
/// [`spawn_native_with`]`(py, JobOptions::new(), f)`.
///
/// What it returns is a coroutine written by hand (registered as a
/// `collections.abc.Coroutine`): `await`, `asyncio.create_task`, `ensure_future`,
/// `TaskGroup.create_task`, `gather`, `wait_for` and anyio's `start_soon` take it. The job
/// starts when this is called, not at the coroutine's first step; a cancel before that step
/// still reaches it.
///
/// - `f` runs on a thread of its own ([`tethered::ThreadSpawner`]'s), without the GIL. It is counted in [`tethered::stats()`] until
///   it returns.
/// - Awaiting it gives `f`'s value converted to Python ([`IntoPyResult`]); an `Err` from `f` is
///   raised as that exception; a panic in `f` raises pyo3's `PanicException` with the panic
///   message.
/// - Cancelling the awaiting task cancels the token at once, with the reason of the crate's
///   table ([`CancelReason::Timeout`] for `asyncio.timeout`, `Dropped` for a caller that gave
///   up, the `cancel(msg)` message as the token's cause), and the task's `CancelledError` is
///   raised once `f` has returned (its value is then dropped), as anyio's and trio's
///   `to_thread.run_sync` do: when the cancellation completes, the native code is done. Give
///   the options a [`grace`](JobOptions::grace) to bound that wait (zero raises at once).
/// - The coroutine freed before it is done (nothing references it any more, so nothing can
///   await it) cancels with `Dropped`, as dropping a Rust future does.
/// - The loop closing with the job unfinished, or the interpreter exiting, cancels with
///   [`CancelReason::Shutdown`]; an outcome that arrives after its loop closed is dropped
///   quietly.
///
/// [`CancelReason::Timeout`]: tethered::CancelReason::Timeout
/// [`CancelReason::Shutdown`]: tethered::CancelReason::Shutdown
///
/// # Errors
///
/// `RuntimeError` when no asyncio event loop or trio run is running on this thread (call it
/// from a coroutine), or when the job could not start.
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
///         n
///     })
/// }
/// ```
pub fn spawn_native<'py, F, R, M>(py: Python<'py>, f: F) -> PyResult<Bound<'py, PyAny>>
where
    F: FnOnce(CancelToken) -> R + Send + 'static,
    R: IntoPyResult<M>,
{
    call(py, JobOptions::new(), f)
}

/// [`spawn_native`] with [`JobOptions`]: every option is honoured.
///
/// - `grace`: once the job is cancelled (its awaiting task cancelled, a deadline, a parent),
///   the awaiting coroutine waits at most this long for `f` to return, then raises and leaves
///   `f` to return by itself, counted in [`stats()`](tethered::stats)`.detached` until then.
///   `Duration::ZERO` raises at once, as `run_in_executor` does. Unset, it waits for `f`.
/// - `timeout` or `deadline`: cancels the job with `Timeout` when it passes; the coroutine
///   raises `TimeoutError` once `f` returned (or the grace passed).
/// - `child_of`: cancelling a parent token cancels the job with its reason; if `f` returns a
///   value after that, the coroutine gives the value (asyncio has no stop that carries one,
///   so `f` decides what a stopped run returns), and a job stopped before `f` ran cancels the
///   coroutine's future (`CancelledError` with the reason).
/// - `name`, `panic`, and the placement: `on` a [`Spawner`](tethered::Spawner) (a pool),
///   `in_scope` a [`NativeScope`](tethered::NativeScope) (bounded, cancelled and reported
///   with its other jobs); unplaced, a thread of its own.
///
/// # Errors
///
/// As [`spawn_native`].
///
/// ```no_run
/// use std::sync::LazyLock;
/// use std::time::Duration;
/// use pyo3::prelude::*;
/// use tethered::{CancelReason, JobOptions, NativeScope};
///
/// /// One scope for the module: `shutdown()` below cancels every job it runs.
/// static SCOPE: LazyLock<NativeScope> = LazyLock::new(NativeScope::new);
///
/// /// `await render(scene)`: at most 30 s, and a cancelled render keeps its caller at most
/// /// 100 ms.
/// #[pyfunction]
/// fn render(py: Python<'_>, scene: String) -> PyResult<Bound<'_, PyAny>> {
///     let options = JobOptions::new()
///         .name("render")
///         .timeout(Duration::from_secs(30))
///         .grace(Duration::from_millis(100))
///         .in_scope(&SCOPE);
///     tethered_pyo3::spawn_native_with(py, options, move |token| {
///         let mut frames = 0u32;
///         while !token.is_cancelled() && frames < 1_000 {
///             frames += 1; // render one frame of `scene`
///         }
///         (scene, frames)
///     })
/// }
///
/// #[pyfunction]
/// fn shutdown() {
///     SCOPE.cancel_all(CancelReason::Shutdown);
/// }
/// ```
pub fn spawn_native_with<'py, P, F, R, M>(
    py: Python<'py>,
    options: JobOptions<P>,
    f: F,
) -> PyResult<Bound<'py, PyAny>>
where
    P: Placement,
    F: FnOnce(CancelToken) -> R + Send + 'static,
    R: IntoPyResult<M>,
{
    call(py, options, f)
}
