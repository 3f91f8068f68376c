//! A job's outcome as Python sees it.
//!
//! | The handle gives | The awaiting coroutine gets |
//! | --- | --- |
//! | `Ok(value)` | the value, converted with [`IntoPyResult`](crate::IntoPyResult) |
//! | `Ok(Err(err))` (a `PyResult` closure) | `err` raised; a `StopIteration`, which asyncio refuses to put in a future, as a `RuntimeError` whose `__cause__` is it (as PEP 479 does for generators) |
//! | `Err(NativeError::Panicked(..))`, or a panic in the conversion | pyo3's `PanicException` with the panic message |
//! | a stop with [`CancelReason::Timeout`] (the job's own `timeout` or `deadline`, a parent's), whether the closure ran or not, or was abandoned | `TimeoutError` |
//! | `Err(NativeError::Cancelled { returned: Some(value), .. })` with another reason (the closure ran and returned after a cancel from a parent token or a scope) | the value: asyncio has no stop that carries a value, so the closure decides what a stopped run returns |
//! | `Err(NativeError::Cancelled { returned: None, .. })`, `Err(NativeError::Abandoned { .. })` with another reason (stopped before its closure ran, or not waited for past the grace) | `CancelledError` with the reason and its cause (`"cancellation was requested: request ended"`): the future is cancelled |
//! | any other `Err` | `RuntimeError` with the error's message |
//!
//! A coroutine whose own task was cancelled raises that `CancelledError` whatever the outcome.

use pyo3::exceptions::{PyRuntimeError, PyTimeoutError};
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3::types::PyString;
use tethered::{CancelReason, NativeError};

use crate::glue::Settle;

/// What a finished closure leaves behind: its value, to be converted under the GIL.
pub(crate) type Convert = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// How to settle the future, and with what.
pub(crate) fn to_python(
    py: Python<'_>,
    result: Result<Convert, NativeError<Convert>>,
) -> (Settle, Py<PyAny>) {
    let err = match result {
        Ok(convert) => return converted(py, convert),
        Err(err) if err.cancel_reason() == Some(CancelReason::Timeout) => {
            let timeout = PyTimeoutError::new_err(timeout_message(&err));
            tethered::__private::drop_contained(err);
            return (Settle::Exception, timeout.into_value(py).into_any());
        }
        Err(NativeError::Cancelled {
            returned: Some(convert),
            ..
        }) => return converted(py, *convert),
        Err(err) => err,
    };
    let outcome = match &err {
        NativeError::Cancelled { reason, .. } | NativeError::Abandoned { reason, .. } => {
            let message = match err.cause() {
                Some(cause) => format!("{reason}: {cause}"),
                None => reason.to_string(),
            };
            (
                Settle::Cancel,
                PyString::new(py, &message).into_any().unbind(),
            )
        }
        NativeError::Panicked(panic) => (Settle::Exception, panic_exception(py, panic.message())),
        other => (
            Settle::Exception,
            PyRuntimeError::new_err(other.to_string())
                .into_value(py)
                .into_any(),
        ),
    };
    // What the closure returned after a cancel, and a panic payload, are user data whose drop
    // may panic.
    tethered::__private::drop_contained(err);
    outcome
}

/// The message of the `TimeoutError` a job stopped by a deadline raises, in Python and in
/// `run_native`.
pub(crate) fn timeout_message<T>(err: &NativeError<T>) -> String {
    match err {
        NativeError::Abandoned { grace, .. } => format!(
            "the native job reached its deadline and did not return within its grace of \
             {grace:?}; it runs on detached"
        ),
        _ => "the native job reached its deadline".to_owned(),
    }
}

/// The closure's value converted, or what its conversion raised.
fn converted(py: Python<'_>, convert: Convert) -> (Settle, Py<PyAny>) {
    match tethered::__private::catch_panic(|| convert(py)) {
        Ok(Ok(value)) => (Settle::Result, value),
        Ok(Err(err)) => (Settle::Exception, err.into_value(py).into_any()),
        Err(panic) => (Settle::Exception, panic_exception(py, panic.message())),
    }
}

pub(crate) fn panic_exception(py: Python<'_>, message: Option<&str>) -> Py<PyAny> {
    let message = message.unwrap_or("native job panicked (with a payload that is not a string)");
    PanicException::new_err((message.to_owned(),))
        .into_value(py)
        .into_any()
}
