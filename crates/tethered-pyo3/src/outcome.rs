//! A job's outcome as Python sees it.
//!
//! | The handle gives | The awaiting coroutine gets |
//! | --- | --- |
//! | `Ok(value)` | the value, converted with [`IntoPyResult`](crate::IntoPyResult) |
//! | `Ok(Err(err))` (a `PyResult` closure) | `err` raised |
//! | `Err(NativeError::Panicked(..))`, or a panic in the conversion | pyo3's `PanicException` with the panic message |
//! | `Err(NativeError::Cancelled { reason, .. })` (stopped by a parent token, a scope, the loop's shutdown, before or while its closure ran) | `CancelledError(str(reason))`: the future is cancelled |
//! | any other `Err` | `RuntimeError` with the error's message |

use pyo3::exceptions::PyRuntimeError;
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3::types::PyString;
use tethered::NativeError;

use crate::glue::Settle;
use crate::link::Convert;

/// How to settle the future, and with what.
pub(crate) fn to_python(
    py: Python<'_>,
    result: Result<Convert, NativeError<Convert>>,
) -> (Settle, Py<PyAny>) {
    let err = match result {
        Ok(convert) => {
            return match tethered::catch_panic(|| convert(py)) {
                Ok(Ok(value)) => (Settle::Result, value),
                Ok(Err(err)) => (Settle::Exception, err.into_value(py).into_any()),
                Err(panic) => (Settle::Exception, panic_exception(py, panic.message())),
            };
        }
        Err(err) => err,
    };
    let outcome = match &err {
        // Stopped, whether or not the closure ran and returned something after the cancel:
        // for Python the awaited future is cancelled either way, with the reason.
        NativeError::Cancelled { reason, .. } => (
            Settle::Cancel,
            PyString::new(py, &reason.to_string()).into_any().unbind(),
        ),
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
    tethered::drop_contained(err);
    outcome
}

fn panic_exception(py: Python<'_>, message: Option<&str>) -> Py<PyAny> {
    let message = message.unwrap_or("native job panicked (with a payload that is not a string)");
    PanicException::new_err((message.to_owned(),))
        .into_value(py)
        .into_any()
}
