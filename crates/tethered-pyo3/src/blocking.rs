//! [`run_native`] and [`Builder::run`](crate::Builder::run): a synchronous `#[pyfunction]`
//! whose native work Ctrl-C stops.
//!
//! The closure runs on a native thread; the calling thread (the interpreter's) waits for it
//! with the GIL released and attaches to run Python's signal handlers (`PyErr_CheckSignals`)
//! every [`SIGNAL_CHECK`]. When a handler raises (`KeyboardInterrupt` for Ctrl-C), or
//! the timeout passes, the job's token is cancelled and the call waits for the closure to
//! return, up to the grace; then it raises. A native core crate sees only a `CancelToken`.
//!
//! # States of a call
//!
//! ```text
//!  Waiting ──closure returned──▶ return its value
//!     │ a signal handler raised / the timeout passed: token cancelled
//!     ▼
//!  Stopping ──closure returned──▶ raise (KeyboardInterrupt, or TimeoutError)
//!     │ the grace passed, or a second signal handler raised
//!     ▼
//!  raise at once; the job is detached (counted in `stats().detached` until it returns)
//! ```

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyRuntimeError, PyTimeoutError};
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use tethered::{AbortableNative, CancelReason, NativeError};

/// How often a waiting call runs Python's signal handlers: Ctrl-C is seen within this. Each
/// look takes the GIL for a moment (a few microseconds when nothing is pending).
pub const SIGNAL_CHECK: Duration = Duration::from_millis(20);

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

/// Why the call stopped waiting for a value.
enum Stop {
    /// A signal handler raised this.
    Signal(PyErr),
    /// The timeout passed.
    Timeout(Duration),
}

/// How long a call waits, and how long it gives a cancelled closure.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Limits {
    pub(crate) timeout: Option<Duration>,
    pub(crate) grace: Option<Duration>,
}

/// Waits for `job` as the module docs say; the closure's value, or the error to raise.
pub(crate) fn wait<T: Send + 'static>(
    py: Python<'_>,
    mut job: AbortableNative<T>,
    limits: Limits,
) -> PyResult<T> {
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let started = Instant::now();
    let deadline = limits
        .timeout
        .and_then(|timeout| started.checked_add(timeout));
    let mut stop: Option<(Stop, Option<Instant>)> = None;
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
                let mut until = check_at;
                if stop.is_none() {
                    if let Some(deadline) = deadline {
                        until = until.min(deadline);
                    }
                }
                if let Some((_, Some(give_up))) = &stop {
                    until = until.min(*give_up);
                }
                if now >= until {
                    return None;
                }
                // `park_timeout` sleeps through a signal (it retries the futex wait on EINTR):
                // the handlers run at the next tick, within `SIGNAL_CHECK`.
                std::thread::park_timeout(until - now);
            }
        });
        if let Some(result) = ready {
            return match stop {
                None => value(result),
                // Stopped: the closure has returned; its value is dropped and the stop raised.
                Some((stop, _)) => Err(raise(stop)),
            };
        }
        let now = Instant::now();
        match &stop {
            None => {
                let reason = if let Err(err) = py.check_signals() {
                    let name = err.get_type(py).name().map_or_else(
                        |_| "a signal handler's exception".to_owned(),
                        |n| n.to_string(),
                    );
                    Some((
                        Stop::Signal(err),
                        CancelReason::custom(format!("interrupted: {name}")),
                    ))
                } else if deadline.is_some_and(|deadline| now >= deadline) {
                    let timeout = limits.timeout.unwrap_or_default();
                    Some((Stop::Timeout(timeout), CancelReason::Timeout))
                } else {
                    None
                };
                if let Some((why, reason)) = reason {
                    job.cancel(reason);
                    let give_up = limits.grace.and_then(|grace| now.checked_add(grace));
                    stop = Some((why, give_up));
                }
            }
            Some((_, give_up)) => {
                // A second signal (Ctrl-C again) or the grace passed: raise now, and leave the
                // closure to return by itself, counted as detached.
                let again = py.check_signals().err();
                let late = give_up.is_some_and(|give_up| now >= give_up);
                if again.is_some() || late {
                    job.detach();
                    let (first, _) = stop.take().expect("matched Some");
                    return Err(match again {
                        Some(err) => err,
                        None => raise(first),
                    });
                }
            }
        }
    }
}

/// The error a stop raises.
fn raise(stop: Stop) -> PyErr {
    match stop {
        Stop::Signal(err) => err,
        Stop::Timeout(timeout) => PyTimeoutError::new_err(format!(
            "the native call did not return within {timeout:?}; it was cancelled with Timeout"
        )),
    }
}

/// The closure's value, or what its job's end raises.
fn value<T>(result: Result<T, NativeError<T>>) -> PyResult<T> {
    match result {
        Ok(value) => Ok(value),
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
        }) => Err(PyRuntimeError::new_err(format!(
            "the native call was cancelled before it ran: {reason}"
        ))),
        Err(err) => Err(PyRuntimeError::new_err(format!(
            "the native call stopped: {err}"
        ))),
    }
}
