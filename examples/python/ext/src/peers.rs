//! What an asyncio user of pyo3 reaches for without tethered, for the benchmark beside `add`
//! (`crates/tethered-pyo3/tests/python/bench_peers.py`).

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

/// `await add_tokio(a, b)`: the sum, computed on tokio's blocking pool and awaited through
/// pyo3-async-runtimes (`future_into_py` over `spawn_blocking`). A cancelled await drops the
/// tokio future; the closure runs on regardless (nothing tells it).
#[pyfunction]
pub(crate) fn add_tokio(py: Python<'_>, a: i64, b: i64) -> PyResult<Bound<'_, PyAny>> {
    pyo3_async_runtimes::tokio::future_into_py(py, async move {
        tokio::task::spawn_blocking(move || a + b)
            .await
            .map_err(|err| PyRuntimeError::new_err(format!("the blocking task failed: {err}")))
    })
}
