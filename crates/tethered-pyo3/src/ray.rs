//! Ray's cancel of a synchronous or threaded actor's method, turned into the token of a
//! [`run_native`](crate::run_native) call.
//!
//! `ray.cancel` reaches a running task three ways (Ray 2.60): a plain task's worker gets
//! `KeyboardInterrupt` on its main thread (which `run_native` already sees at its next signal
//! check); an async actor's method has its asyncio task cancelled (which a
//! [`spawn_native`](crate::spawn_native) coroutine already sees); and a synchronous or threaded
//! actor's method gets nothing but a flag, which only code running on that method's thread can
//! read: `ray.get_runtime_context().is_canceled()`. That last one is read here, at each signal
//! check of a waiting `run_native` call, on the calling thread, which is the method's.
//!
//! Nothing here imports Ray: a process that has not imported it pays one dictionary lookup per
//! call. In a Ray worker, the flag is read once per [`SIGNAL_CHECK`](crate::SIGNAL_CHECK)
//! (under a microsecond each).

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// Ray's cancelled flag for the task running on this thread, if this is a Ray worker running a
/// task whose flag can be read: `ray.get_runtime_context().is_canceled`. `None` outside Ray, on
/// Ray's driver, and in an async actor (whose methods Ray cancels through asyncio), where Ray
/// raises on the call.
pub(crate) struct RayCancelled<'py> {
    is_canceled: Bound<'py, PyAny>,
}

impl<'py> RayCancelled<'py> {
    /// The flag's reader, if Ray is imported and answers on this thread.
    pub(crate) fn find(py: Python<'py>) -> Option<Self> {
        let modules = py.import("sys").ok()?.getattr("modules").ok()?;
        let modules = modules.cast_into::<PyDict>().ok()?;
        let ray = modules.get_item("ray").ok()??;
        let context = ray.call_method0("get_runtime_context").ok()?;
        let is_canceled = context.getattr("is_canceled").ok()?;
        // Raises on the driver and in an async actor: then Ray has nothing to tell us.
        is_canceled.call0().ok()?;
        Some(RayCancelled { is_canceled })
    }

    /// Whether Ray has cancelled the task running on this thread. A reader that raises is
    /// taken as "no".
    pub(crate) fn cancelled(&self) -> bool {
        self.is_canceled
            .call0()
            .and_then(|answer| answer.is_truthy())
            .unwrap_or(false)
    }

    /// What a call that Ray's cancel stopped raises: Ray's own `TaskCancelledError`, which
    /// `ray.get` gives the caller (a `RuntimeError` if it cannot be made).
    pub(crate) fn error(&self, py: Python<'py>) -> PyErr {
        let made = py
            .import("ray.exceptions")
            .and_then(|exceptions| exceptions.getattr("TaskCancelledError"))
            .and_then(|class| {
                class.call1((
                    py.None(),
                    "the native call stopped at ray.cancel (tethered-pyo3)",
                ))
            });
        match made {
            Ok(error) => PyErr::from_value(error),
            Err(err) => err,
        }
    }
}

/// The cause a Ray cancel gives the job's token.
pub(crate) const CAUSE: &str = "ray.cancel";
