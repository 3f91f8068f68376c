//! [`run_native`] and [`run_native_with`]: a synchronous `#[pyfunction]` whose native work
//! Ctrl-C stops.
//!
//! The closure runs on a native thread; the calling thread (the interpreter's) waits for it
//! with the GIL released and attaches to run Python's signal handlers (`PyErr_CheckSignals`)
//! every [`SIGNAL_CHECK`]. When a handler raises (`KeyboardInterrupt` for Ctrl-C), the job's
//! token is cancelled and the call waits for the job's handle: the closure's return, or the
//! end of the options' grace. A deadline of the options cancels the job by itself. Under Ray,
//! each check also reads Ray's cancelled flag of the task running on the calling thread
//! (`ray.rs`), which is all Ray tells a synchronous or threaded actor's method. A native
//! core crate sees only a `CancelToken`.
//!
//! # States of a call
//!
//! ```text
//!  Waiting ──handle resolved──▶ return its value (TimeoutError for a deadline)
//!     │ a signal handler raised: token cancelled (Dropped, the exception's name the cause;
//!     │ Shutdown for SystemExit); or Ray's flag read cancelled (Dropped, "ray.cancel"),
//!     │ which raises Ray's TaskCancelledError, or what Ray's own interrupt raised
//!     ▼
//!  Interrupted ──handle resolved (closure returned, or grace passed)──▶ raise that exception
//!     │ a second signal handler raised
//!     ▼
//!  raise the second exception at once; the job is detached (counted in `stats().detached`
//!  until its closure returns)
//! ```

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyRuntimeError, PySystemExit, PyTimeoutError};
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use tethered::{
    AbortableNative, CancelReason, CancelToken, Cause, JobOptions, NativeError, Placement, Tethered,
};

use crate::outcome::timeout_message;
use crate::ray::{self, RayCancelled};

/// How often a waiting [`run_native`] call runs Python's signal handlers: Ctrl-C is seen
/// within this. Each look takes the GIL for a moment (a few microseconds when nothing is
/// pending).
///
/// ```
/// assert_eq!(tethered_pyo3::SIGNAL_CHECK, std::time::Duration::from_millis(20));
/// ```
pub const SIGNAL_CHECK: Duration = Duration::from_millis(20);

/// Runs `f` on a native thread while the calling thread waits for it, so that Ctrl-C stops
/// a synchronous call: for a plain (not `async`) `#[pyfunction]`. It is
/// [`run_native_with`]`(py, JobOptions::new(), f)`: a thread of its own, no deadline, a call that waits
/// for `f` to return.
///
/// The calling thread waits with the GIL released (other Python threads run) and runs
/// Python's signal handlers every [`SIGNAL_CHECK`]. When one raises (`KeyboardInterrupt` for
/// Ctrl-C, or whatever a handler of the application's raises), `f`'s token is cancelled with
/// [`CancelReason::Dropped`] (the caller gave up) and the cause `"interrupted:
/// KeyboardInterrupt"`, and the call waits for `f` to return, then raises that exception (the
/// value is dropped). A second Ctrl-C while it waits raises at once, leaving `f` to return by
/// itself. A handler that raises `SystemExit` (a SIGTERM handler's `sys.exit`) cancels with
/// [`CancelReason::Shutdown`] instead. Signals reach only the main thread: called from another
/// thread, only a deadline of [`run_native_with`]'s options stops it, or Ray.
///
/// In a Ray worker, the call also reads Ray's cancelled flag of the task running on its
/// thread at each check: `ray.cancel` of a task, or of a synchronous or threaded actor's
/// method (which Ray tells nothing else), cancels `f`'s token with `Dropped` and the cause
/// `"ray.cancel"`, and the call raises Ray's `TaskCancelledError` once `f` returned.
///
/// A native core crate that knows nothing of Python sees only the `CancelToken`.
///
/// # Errors
///
/// The signal handler's exception, pyo3's `PanicException` if `f` panicked, and
/// `RuntimeError` if the job could not start or was stopped before it ran (a parent token, a
/// scope).
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
    run_native_with(py, JobOptions::new(), f)
}

/// [`run_native`] with [`JobOptions`]: every option is honoured.
///
/// - `timeout` or `deadline`: cancels the job with [`CancelReason::Timeout`] when it passes,
///   and the call raises `TimeoutError` once `f` returned (or once the grace passed).
/// - `grace`: how long an interrupted or timed-out call waits for `f` to return before it
///   raises anyway, leaving `f` to return by itself (counted in
///   [`stats()`](tethered::stats)`.detached` until then). Unset, it waits as long as `f`
///   takes; a second Ctrl-C raises at once either way.
/// - `name`, `child_of`, `panic`, and the placement (`on` a spawner, `in_scope`): as for every
///   job; unplaced, `f` runs on a thread of its own
///   ([`tethered::ThreadSpawner`]'s).
///
/// # Errors
///
/// As [`run_native`], and `TimeoutError` when the deadline passed.
///
/// ```no_run
/// use std::time::Duration;
/// use pyo3::prelude::*;
/// use tethered::JobOptions;
///
/// /// `solve(puzzle)` gives up after 10 s (`TimeoutError`), and once interrupted waits at
/// /// most 1 s for the solver to notice.
/// #[pyfunction]
/// fn solve(py: Python<'_>, puzzle: Vec<u8>) -> PyResult<usize> {
///     let options = JobOptions::new()
///         .name("solver")
///         .timeout(Duration::from_secs(10))
///         .grace(Duration::from_secs(1));
///     tethered_pyo3::run_native_with(py, options, move |token| {
///         let mut tries = 0;
///         while !token.is_cancelled() && tries < puzzle.len() * 1_000 {
///             tries += 1;
///         }
///         tries
///     })
/// }
/// ```
pub fn run_native_with<P, T, F>(py: Python<'_>, options: JobOptions<P>, f: F) -> PyResult<T>
where
    P: Placement,
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    let job = tethered::spawn(options, f)
        .map_err(|err| PyRuntimeError::new_err(format!("the native job did not start: {err}")))?;
    wait(py, job)
}

/// Wakes the waiting thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// What stopped a waiting call.
enum Stop {
    /// A signal handler raised this: raised again once the job's handle resolved.
    Signal(PyErr),
    /// Ray cancelled the task whose thread this is (its flag, read at a signal check).
    Ray,
}

/// Waits for `job` as the module docs say; the closure's value, or the error to raise.
fn wait<T: Send + 'static>(py: Python<'_>, mut job: AbortableNative<T>) -> PyResult<T> {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    // Under Ray, the cancelled flag of the task on this thread (see `ray.rs`).
    let ray = RayCancelled::find(py);
    let mut stopped: Option<Stop> = None;
    loop {
        // Without the GIL: the closure (and every other Python thread) runs meanwhile.
        let ready = py.detach(|| {
            let check_at = Instant::now() + SIGNAL_CHECK;
            loop {
                let mut cx = Context::from_waker(&waker);
                if let Poll::Ready(result) = Pin::new(&mut job).poll(&mut cx) {
                    return Some(result);
                }
                let now = Instant::now();
                if now >= check_at {
                    return None;
                }
                // `park_timeout` sleeps through a signal (it retries the futex wait on EINTR):
                // the handlers run at the next tick, within `SIGNAL_CHECK`.
                std::thread::park_timeout(check_at - now);
            }
        });
        if let Some(result) = ready {
            return match stopped {
                None => value(result),
                Some(stop) => {
                    // The closure has returned (or its grace passed): its value is dropped.
                    tethered::__private::drop_contained(result);
                    Err(match stop {
                        Stop::Signal(err) => err,
                        Stop::Ray => ray.as_ref().map_or_else(
                            || PyRuntimeError::new_err("the native call was cancelled"),
                            |ray| ray.error(py),
                        ),
                    })
                }
            };
        }
        match (py.check_signals(), &stopped) {
            (Ok(()), Some(_)) => {}
            (Ok(()), None) => {
                if ray.as_ref().is_some_and(RayCancelled::cancelled) {
                    job.cancel_with_cause(CancelReason::Dropped, Cause::msg(ray::CAUSE));
                    stopped = Some(Stop::Ray);
                }
            }
            // A second signal (Ctrl-C again): raise now, and leave the closure to return by
            // itself, counted as detached.
            (Err(err), Some(Stop::Signal(_))) => {
                job.detach();
                return Err(err);
            }
            // Ray interrupts a plain task's main thread too (`KeyboardInterrupt`) for the
            // cancel the flag already told: the same stop, which raises what Ray raised.
            (Err(err), Some(Stop::Ray)) => stopped = Some(Stop::Signal(err)),
            (Err(err), None) => {
                let (reason, cause) = interrupted(py, &err, ray.as_ref());
                job.cancel_with_cause(reason, cause);
                stopped = Some(Stop::Signal(err));
            }
        }
    }
}

/// The reason and cause of a call that a signal handler's exception interrupted: a
/// `SystemExit` (a SIGTERM handler's `sys.exit`, as Ray's workers have) is the process
/// shutting down; anything else is the caller giving up, and under Ray, a cancel of its task
/// (Ray interrupts a plain task's main thread with `KeyboardInterrupt`) says so.
fn interrupted(
    py: Python<'_>,
    err: &PyErr,
    ray: Option<&RayCancelled<'_>>,
) -> (CancelReason, Cause) {
    if ray.is_some_and(RayCancelled::cancelled) {
        return (CancelReason::Dropped, Cause::msg(ray::CAUSE));
    }
    let name = err.get_type(py).name().map_or_else(
        |_| "a signal handler's exception".to_owned(),
        |n| n.to_string(),
    );
    let reason = if err.is_instance_of::<PySystemExit>(py) {
        CancelReason::Shutdown
    } else {
        CancelReason::Dropped
    };
    (reason, Cause::msg(format!("interrupted: {name}")))
}

/// The closure's value, or what its job's end raises.
fn value<T>(result: Result<T, NativeError<T>>) -> PyResult<T> {
    match result {
        Ok(value) => Ok(value),
        Err(err) if err.cancel_reason() == Some(CancelReason::Timeout) => {
            let timeout = PyTimeoutError::new_err(timeout_message(&err));
            tethered::__private::drop_contained(err);
            Err(timeout)
        }
        // Cancelled from elsewhere (a parent token, a scope) after it returned: its value.
        Err(NativeError::Cancelled {
            returned: Some(value),
            ..
        }) => Ok(*value),
        Err(NativeError::Panicked(panic)) => Err(PanicException::new_err(
            panic
                .message()
                .unwrap_or("the native call panicked")
                .to_owned(),
        )),
        // Stopped before it ran (a parent token, a scope, a pool that shut down).
        Err(NativeError::Cancelled {
            reason,
            returned: None,
            ..
        }) => Err(PyRuntimeError::new_err(format!(
            "the native call was cancelled before it ran: {reason}"
        ))),
        Err(err) => {
            let message = format!("the native call stopped: {err}");
            tethered::__private::drop_contained(err);
            Err(PyRuntimeError::new_err(message))
        }
    }
}
