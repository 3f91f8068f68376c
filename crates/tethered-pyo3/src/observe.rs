//! Which native code ignores its cancel, read from Python: [`cancel_stats`], [`stubborn_jobs`]
//! and [`set_stubborn_after`], `#[pyfunction]`s an extension module adds as they are. Each
//! module links its own copy of `tethered`, so each reports its own jobs.
//!
//! Python's shape: dicts and lists of plain values, times in seconds (`float`), reasons as the
//! lower-case names of [`CancelReason::as_str`](tethered::CancelReason::as_str).

use std::time::Duration;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use tethered::{ByReason, CancelToReturn};

/// `cancel_stats()`: what cancels did to this module's running native work so far
/// ([`tethered::cancel_stats`]), as a dict:
///
/// ```python
/// {
///     "reached_running": {"requested": 0, "dropped": 3, "timeout": 1, "shutdown": 0, "failed": 0},
///     "returned_after_cancel": {...},  # the same keys
///     "abandoned": {...},              # the same keys
///     "stubborn": 1,                   # jobs ever listed by stubborn_jobs()
///     "cancel_to_return": {            # by job name ("" for unnamed jobs)
///         "render": {
///             "count": 4, "sum": 0.0031, "max": 0.0012,   # seconds
///             "p50": 0.001, "p99": 0.002,                 # upper estimates, in seconds
///             "buckets": [(1e-05, 0), (2e-05, 1), ..., (60.0, 0), (inf, 0)],
///         },
///     },
/// }
/// ```
///
/// `buckets` pairs each bucket's upper bound with how many returns fell in it (not cumulative).
///
/// ```no_run
/// use pyo3::prelude::*;
///
/// #[pymodule]
/// fn sandbox(m: &Bound<'_, PyModule>) -> PyResult<()> {
///     m.add_function(wrap_pyfunction!(tethered_pyo3::cancel_stats, m)?)?;
///     m.add_function(wrap_pyfunction!(tethered_pyo3::stubborn_jobs, m)?)?;
///     m.add_function(wrap_pyfunction!(tethered_pyo3::set_stubborn_after, m)?)
/// }
/// ```
///
/// # Errors
///
/// Only what Python raises when a dict cannot be filled (out of memory).
#[pyfunction]
pub fn cancel_stats(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let stats = tethered::cancel_stats();
    let dict = PyDict::new(py);
    dict.set_item("reached_running", by_reason(py, &stats.reached_running)?)?;
    dict.set_item(
        "returned_after_cancel",
        by_reason(py, &stats.returned_after_cancel)?,
    )?;
    dict.set_item("abandoned", by_reason(py, &stats.abandoned)?)?;
    dict.set_item("stubborn", stats.stubborn)?;
    let by_name = PyDict::new(py);
    for histogram in &stats.by_name {
        by_name.set_item(&histogram.name, cancel_to_return(py, histogram)?)?;
    }
    dict.set_item("cancel_to_return", by_name)?;
    Ok(dict)
}

/// `stubborn_jobs()`: this module's jobs cancelled and still running past the threshold
/// ([`tethered::stubborn_jobs`]), the longest cancelled first, each a dict:
///
/// ```python
/// {"id": 17, "name": "legacy-scan", "reason": "timeout", "cause": "deadline 2 s",
///  "since_cancel": 4.2}   # seconds; name and cause may be None
/// ```
///
/// ```no_run
/// # use pyo3::prelude::*;
/// #[pymodule]
/// fn sandbox(m: &Bound<'_, PyModule>) -> PyResult<()> {
///     m.add_function(wrap_pyfunction!(tethered_pyo3::stubborn_jobs, m)?)
/// }
/// ```
///
/// # Errors
///
/// Only what Python raises when a list cannot be filled (out of memory).
#[pyfunction]
pub fn stubborn_jobs(py: Python<'_>) -> PyResult<Bound<'_, PyList>> {
    let list = PyList::empty(py);
    for job in tethered::stubborn_jobs() {
        let dict = PyDict::new(py);
        dict.set_item("id", job.id.get())?;
        dict.set_item("name", job.name)?;
        dict.set_item("reason", job.reason.as_str())?;
        dict.set_item("cause", job.cause.map(|cause| cause.to_string()))?;
        dict.set_item("since_cancel", job.since_cancel.as_secs_f64())?;
        list.append(dict)?;
    }
    Ok(list)
}

/// `set_stubborn_after(seconds)`: how long a job may run on after its cancel before
/// `stubborn_jobs()` lists it ([`tethered::set_stubborn_after`]; 1 s unless set). `0` lists a
/// job at once, `math.inf` never; a negative or NaN number raises `ValueError`.
///
/// ```no_run
/// # use pyo3::prelude::*;
/// #[pymodule]
/// fn sandbox(m: &Bound<'_, PyModule>) -> PyResult<()> {
///     m.add_function(wrap_pyfunction!(tethered_pyo3::set_stubborn_after, m)?)
/// }
/// ```
///
/// # Errors
///
/// `ValueError` for a negative or NaN number of seconds.
#[pyfunction]
pub fn set_stubborn_after(seconds: f64) -> PyResult<()> {
    if seconds.is_nan() || seconds < 0.0 {
        return Err(PyValueError::new_err(format!(
            "set_stubborn_after takes a number of seconds from 0 to math.inf, not {seconds}"
        )));
    }
    let after = Duration::try_from_secs_f64(seconds).unwrap_or(Duration::MAX);
    tethered::set_stubborn_after(after);
    Ok(())
}

fn by_reason<'py>(py: Python<'py>, counts: &ByReason) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    for (reason, count) in counts.iter() {
        dict.set_item(reason.as_str(), count)?;
    }
    Ok(dict)
}

fn cancel_to_return<'py>(
    py: Python<'py>,
    histogram: &CancelToReturn,
) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("count", histogram.count)?;
    dict.set_item("sum", histogram.sum.as_secs_f64())?;
    dict.set_item("max", histogram.max.as_secs_f64())?;
    let seconds = |quantile: Option<Duration>| quantile.map(|time| time.as_secs_f64());
    dict.set_item("p50", seconds(histogram.quantile(0.5)))?;
    dict.set_item("p99", seconds(histogram.quantile(0.99)))?;
    let bounds = CancelToReturn::BOUNDS
        .iter()
        .map(Duration::as_secs_f64)
        .chain([f64::INFINITY]);
    let buckets: Vec<(f64, u64)> = bounds.zip(histogram.buckets.iter().copied()).collect();
    dict.set_item("buckets", buckets)?;
    Ok(dict)
}
