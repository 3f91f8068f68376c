//! [`IntoPyResult`]: what a native closure may return.

use pyo3::prelude::*;
use pyo3::{IntoPyObject, IntoPyObjectExt};

/// A native closure's return value: anything convertible to Python, or a [`PyResult`] (any
/// `Result` whose error converts into a [`PyErr`]) of one.
///
/// The conversion runs after the closure has returned, attached to the interpreter for just
/// that long, on the thread that saw the job finish (usually the one it ran on). An `Err` is raised in the awaiting coroutine as that
/// Python exception.
///
/// Sealed: the two blanket implementations below are all there is, so that a closure's type
/// alone decides how its value reaches Python.
///
/// `Marker` only keeps the two blanket implementations apart ([`marker::Value`] for plain
/// values, [`marker::Fallible`] for `Result`s); the compiler infers it, so code never names it.
///
/// [`marker::Value`]: crate::marker::Value
/// [`marker::Fallible`]: crate::marker::Fallible
///
/// ```no_run
/// use pyo3::exceptions::PyValueError;
/// use pyo3::prelude::*;
///
/// #[pyfunction]
/// fn parse(py: Python<'_>, text: String) -> PyResult<Bound<'_, PyAny>> {
///     // The closure returns `PyResult<i64>`: a `ValueError` when the text is no number.
///     tethered_pyo3::spawn_native(py, move |_token| {
///         text.trim().parse::<i64>().map_err(|err| PyValueError::new_err(err.to_string()))
///     })
/// }
/// ```
pub trait IntoPyResult<Marker>: sealed::Sealed<Marker> + Send + 'static {
    /// Converts the value into a Python object, or the error it carries into a [`PyErr`].
    ///
    /// # Errors
    ///
    /// The error an `Err` carries, or the conversion's own error.
    fn into_py_result(self, py: Python<'_>) -> PyResult<Py<PyAny>>;
}

mod sealed {
    /// Implemented exactly where [`IntoPyResult`](super::IntoPyResult) is.
    pub trait Sealed<Marker> {}
}

impl<T> sealed::Sealed<Value> for T where T: for<'py> IntoPyObject<'py> + Send + 'static {}

impl<T, E> sealed::Sealed<Fallible> for Result<T, E>
where
    T: for<'py> IntoPyObject<'py> + Send + 'static,
    E: Into<PyErr> + Send + 'static,
{
}

/// The [`IntoPyResult`] marker of a plain value (`u64`, `String`, `Vec<T>`, `Py<PyAny>`, ...).
#[derive(Debug)]
pub enum Value {}

/// The [`IntoPyResult`] marker of a `Result<T, E>` with `E: Into<PyErr>`.
#[derive(Debug)]
pub enum Fallible {}

impl<T> IntoPyResult<Value> for T
where
    T: for<'py> IntoPyObject<'py> + Send + 'static,
{
    fn into_py_result(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.into_py_any(py)
    }
}

impl<T, E> IntoPyResult<Fallible> for Result<T, E>
where
    T: for<'py> IntoPyObject<'py> + Send + 'static,
    E: Into<PyErr> + Send + 'static,
{
    fn into_py_result(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.map_err(Into::into)?.into_py_any(py)
    }
}
