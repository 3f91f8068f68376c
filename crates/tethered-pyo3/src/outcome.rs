//! A job's outcome as Python sees it.
//!
//! | The handle gives | The awaiting coroutine gets |
//! | --- | --- |
//! | `Ok(value)` | the value, converted with [`IntoPyResult`](crate::IntoPyResult) |
//! | `Ok(Err(err))` (a `PyResult` closure) | `err` raised |
//! | `Err(NativeError::Panicked(..))`, or a panic in the conversion | pyo3's `PanicException` with the panic message |
//! | `Err(NativeError::Cancelled(reason))` (cancelled before its closure started, by a parent token, a scope, the loop's shutdown) | `CancelledError(str(reason))`: the future is cancelled |
//! | any other `Err` | `RuntimeError` with the error's message |

use std::panic::{AssertUnwindSafe, catch_unwind};

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
    result: Result<Convert, NativeError>,
) -> (Settle, Py<PyAny>) {
    let err = match result {
        Ok(convert) => {
            return match catch_unwind(AssertUnwindSafe(|| convert(py))) {
                Ok(Ok(value)) => (Settle::Result, value),
                Ok(Err(err)) => (Settle::Exception, err.into_value(py).into_any()),
                Err(payload) => {
                    let message = panic_message(&*payload).to_owned();
                    quietly(|| drop(payload));
                    (Settle::Exception, panic_exception(py, &message))
                }
            };
        }
        Err(err) => err,
    };
    let outcome = match &err {
        NativeError::Cancelled(reason) => (
            Settle::Cancel,
            PyString::new(py, &reason.to_string()).into_any().unbind(),
        ),
        NativeError::Panicked(panic) => (
            Settle::Exception,
            panic_exception(py, panic.message().unwrap_or(NON_STRING_PANIC)),
        ),
        other => (
            Settle::Exception,
            PyRuntimeError::new_err(other.to_string())
                .into_value(py)
                .into_any(),
        ),
    };
    // The panic payload is user data, and its drop may panic again.
    quietly(|| drop(err));
    outcome
}

/// Runs `f`, catching a panic; a payload that cannot be dropped quietly is leaked on purpose
/// (its drop is user code that may panic once more).
pub(crate) fn quietly(f: impl FnOnce()) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
        std::mem::forget(payload);
    }
}

const NON_STRING_PANIC: &str = "native job panicked (with a payload that is not a string)";

fn panic_message(payload: &(dyn std::any::Any + Send)) -> &str {
    if let Some(text) = payload.downcast_ref::<&'static str>() {
        text
    } else if let Some(text) = payload.downcast_ref::<String>() {
        text
    } else {
        NON_STRING_PANIC
    }
}

fn panic_exception(py: Python<'_>, message: &str) -> Py<PyAny> {
    PanicException::new_err((message.to_owned(),))
        .into_value(py)
        .into_any()
}
