//! The Python half ([`glue.py`](glue.py)): the functions that run on the event loop's thread,
//! compiled once per interpreter into a module of their own (not listed in `sys.modules`).

use std::ffi::CString;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::code::PyCodeInput;
use pyo3::types::{PyCode, PyCodeMethods};

const SOURCE: &str = include_str!("glue.py");

/// How `resolve` settles a future; the numbers `glue.py` knows.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Settle {
    /// `fut.set_result(value)`.
    Result = 0,
    /// `fut.set_exception(value)`.
    Exception = 1,
    /// `fut.cancel(value)`: the job was cancelled before its closure ran.
    Cancel = 2,
}

/// Why the awaiter of a job stopped waiting, as `glue.py` classifies it (the numbers it passes
/// to the cancel function).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stop {
    /// Cancelled for any reason but a deadline: [`CancelReason::Dropped`](tethered::CancelReason::Dropped).
    GaveUp = 0,
    /// A deadline of asyncio's, anyio's or trio's expired:
    /// [`CancelReason::Timeout`](tethered::CancelReason::Timeout).
    Timeout = 1,
}

impl Stop {
    /// The stop `glue.py` passed; an unknown number is a caller that gave up.
    pub(crate) fn from_code(code: u8) -> Stop {
        if code == Stop::Timeout as u8 {
            Stop::Timeout
        } else {
            Stop::GaveUp
        }
    }
}

/// The functions of `glue.py`.
pub(crate) struct Glue {
    /// `resolve(fut, how, value)`.
    pub(crate) resolve: Py<PyAny>,
    /// `call(fut, cancel)`: the awaitable of a job, a coroutine by hand.
    pub(crate) call: Py<PyAny>,
    /// `asyncio.get_running_loop`.
    pub(crate) get_running_loop: Py<PyAny>,
    /// `running_library()`: "asyncio", "trio" or None.
    pub(crate) running_library: Py<PyAny>,
    /// `trio_state()`, `trio_resolve(state, how, value)`, `trio_wait(state, cancel)`.
    pub(crate) trio_state: Py<PyAny>,
    pub(crate) trio_resolve: Py<PyAny>,
    pub(crate) trio_wait: Py<PyAny>,
}

static GLUE: PyOnceLock<Glue> = PyOnceLock::new();

/// The glue of this interpreter, compiled on first use.
pub(crate) fn glue(py: Python<'_>) -> PyResult<&Glue> {
    GLUE.get_or_try_init(py, || {
        let source = CString::new(SOURCE).expect("glue.py has no NUL byte");
        let code = PyCode::compile(py, &source, c"tethered_pyo3/glue.py", PyCodeInput::File)?;
        let module = PyModule::new(py, "tethered_pyo3.glue")?;
        code.run(Some(&module.dict()), None)?;
        let asyncio = py.import("asyncio")?;
        Ok(Glue {
            resolve: module.getattr("resolve")?.unbind(),
            call: module.getattr("call")?.unbind(),
            get_running_loop: asyncio.getattr("get_running_loop")?.unbind(),
            running_library: module.getattr("running_library")?.unbind(),
            trio_state: module.getattr("trio_state")?.unbind(),
            trio_resolve: module.getattr("trio_resolve")?.unbind(),
            trio_wait: module.getattr("trio_wait")?.unbind(),
        })
    })
}
