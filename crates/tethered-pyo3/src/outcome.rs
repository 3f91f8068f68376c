//! A job's outcome as Python sees it.
//!
//! | The handle gives | The awaiting coroutine gets |
//! | --- | --- |
//! | `Ok(value)`, or `Err(NativeError::Cancelled { returned: Some(value), .. })` (the closure ran and returned after a cancel from a parent token or a scope) | the value, converted with [`IntoPyResult`](crate::IntoPyResult): asyncio has no stop that carries a value, so the closure decides what a stopped run returns |
//! | `Ok(Err(err))` (a `PyResult` closure) | `err` raised; a `StopIteration`, which asyncio refuses to put in a future, as a `RuntimeError` whose `__cause__` is it (as PEP 479 does for generators) |
//! | `Err(NativeError::Panicked(..))`, or a panic in the conversion | pyo3's `PanicException` with the panic message |
//! | `Err(NativeError::Cancelled { reason, returned: None })` (stopped before its closure ran: by a parent token, a scope, the loop's shutdown) | `CancelledError(str(reason))`: the future is cancelled |
//! | any other `Err` | `RuntimeError` with the error's message |

use pyo3::exceptions::PyRuntimeError;
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3::types::PyString;
use tethered::NativeError;

use crate::glue::Settle;

/// What a finished closure leaves behind: its value, to be converted under the GIL.
pub(crate) type Convert = Box<dyn FnOnce(Python<'_>) -> PyResult<Py<PyAny>> + Send>;

/// How to settle the future, and with what.
pub(crate) fn to_python(
    py: Python<'_>,
    result: Result<Convert, NativeError<Convert>>,
) -> (Settle, Py<PyAny>) {
    // A closure that ran and returned after a cancel (a parent token's, a scope's) hands its
    // value to Python as it returned it: asyncio has no stop that carries a value, and the
    // closure decides what a stopped run returns. A stop with nothing returned cancels.
    let result = match result {
        Err(NativeError::Cancelled {
            returned: Some(convert),
            ..
        }) => Ok(*convert),
        other => other,
    };
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
