//! The example extension module of `tethered-pyo3`, `tethered_example`: a sandbox interpreter
//! whose runs stop when the asyncio task awaiting them is cancelled, `spin_seconds` for the MCP
//! example server (`examples/mcp-python`), `add_tokio` (the benchmark's pyo3-async-runtimes
//! peer), and the probes the pytest suite
//! (`crates/tethered-pyo3/tests/python`) drives.
//!
//! Build it into the project's virtualenv with `crates/tethered-pyo3/python/setup.sh`.

#![forbid(unsafe_code)]

mod jobs;
mod naive;
mod peers;
mod probe;
mod sandbox;
mod spin_seconds;

use pyo3::prelude::*;

#[pymodule]
fn tethered_example(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sandbox::run_script, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::stats, m)?)?;
    m.add_function(wrap_pyfunction!(tethered_pyo3::cancel_stats, m)?)?;
    m.add_function(wrap_pyfunction!(tethered_pyo3::stubborn_jobs, m)?)?;
    m.add_function(wrap_pyfunction!(tethered_pyo3::set_stubborn_after, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::named, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::spin_recorded, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::spin_recorded_async, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::naive_sleep, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::add, m)?)?;
    m.add_function(wrap_pyfunction!(peers::add_tokio, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::echo, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::fail, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::stop_iteration, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::panic, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::spin, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::spin_lingering, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::spin_for, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::idle, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::sleep, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::ignore_token, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::thread_name, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::pool_thread_name, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::spin_child_of, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::queued_child_of, m)?)?;
    m.add_function(wrap_pyfunction!(
        jobs::cancel_on_a_rust_thread_holding_a_lock,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(jobs::spin_in_scope, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::cancel_scope, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::spin_sync, m)?)?;
    m.add_function(wrap_pyfunction!(jobs::ignore_token_sync, m)?)?;
    m.add_function(wrap_pyfunction!(spin_seconds::spin_seconds, m)?)?;
    m.add_function(wrap_pyfunction!(spin_seconds::spin_returns, m)?)?;
    m.add_class::<probe::Probe>()?;
    m.add_class::<naive::NaiveSpinner>()?;
    m.add_class::<jobs::Parent>()?;
    m.add_class::<jobs::CancelHolding>()?;
    Ok(())
}
