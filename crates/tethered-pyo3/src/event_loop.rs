//! The running event loop, and a token per loop that is cancelled with
//! [`CancelReason::Shutdown`] when the loop closes.
//!
//! Event loops have no close hook, but asyncio's drop everything they have scheduled when they
//! close (`BaseEventLoop.close` clears its ready queue and its timers), and everything they
//! hold when they are freed. So the first job on a loop schedules a *sentinel*: a timer due in
//! about 30 years whose callback owns the loop's cancel source and cancels it when dropped.
//! The loop holds the only reference to it, so the sentinel goes exactly when the loop lets go
//! of its timers: at `close()`, or when a loop that was never closed is freed. It costs
//! one timer per loop, and wakes an idle loop once a day at most (asyncio caps a selector
//! wait at a day).
//!
//! The loop's token is a child of the interpreter-exit token ([`exit`](crate::exit)); a loop
//! that cannot be weakly referenced gets the exit token itself.

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{IntoPyDict, PyCFunction};
use tethered::{CancelReason, CancelSource, CancelToken};

use crate::exit::exit_token;
use crate::glue::glue;

/// When the sentinel falls due, in seconds (about 31 years): never, in practice.
const SENTINEL_DELAY: f64 = 1e9;

/// The event loops that have a sentinel, weakly: loop -> [`LoopEntry`].
static LOOPS: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// What [`LOOPS`] holds for a loop.
#[pyclass(frozen, module = "tethered_pyo3", name = "LoopEntry")]
struct LoopEntry {
    token: CancelToken,
}

/// `asyncio.get_running_loop()`, with an error that says what to do when there is none.
pub(crate) fn running_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    glue(py)?.get_running_loop.bind(py).call0().map_err(|err| {
        match err.is_instance_of::<PyRuntimeError>(py) {
            true => PyRuntimeError::new_err(
                "no running asyncio event loop: a tethered native job is awaited on the loop \
                 that starts it, so call this function from a coroutine (under asyncio.run, \
                 a running loop, or anyio on asyncio)",
            ),
            false => err,
        }
    })
}

/// The token of `event_loop`: cancelled with [`CancelReason::Shutdown`] when the loop closes or
/// is freed, and when the interpreter exits.
pub(crate) fn loop_token(py: Python<'_>, event_loop: &Bound<'_, PyAny>) -> PyResult<CancelToken> {
    let exit = exit_token(py)?;
    let loops = LOOPS
        .get_or_try_init(py, || {
            py.import("weakref")?
                .call_method0("WeakKeyDictionary")
                .map(Bound::unbind)
        })?
        .bind(py);
    match loops.call_method1("get", (event_loop,)) {
        Ok(entry) if !entry.is_none() => return Ok(entry.cast::<LoopEntry>()?.get().token.clone()),
        Ok(_) => {}
        // Not weakly referenceable: only interpreter exit reaches its jobs.
        Err(err) if err.is_instance_of::<PyTypeError>(py) => return Ok(exit),
        Err(err) => return Err(err),
    }
    let source = exit.child();
    let token = source.token();
    let shutdown = ShutdownOnDrop(source);
    let sentinel = PyCFunction::new_closure(
        py,
        Some(c"tethered_pyo3_loop_sentinel"),
        Some(c"Cancels the loop's native jobs when the loop drops it (closes)."),
        move |_args, _kwargs| {
            let _owned = &shutdown;
        },
    )?;
    // An empty context: the timer would otherwise keep the spawning task's context alive. A
    // loop whose `call_later` takes no `context=` (older or hand-written loops) gets the plain
    // call: the timer then keeps a context alive, and nothing fails.
    let context = py.import("contextvars")?.getattr("Context")?.call0()?;
    let kwargs = [("context", context)].into_py_dict(py)?;
    let scheduled = event_loop.call_method(
        "call_later",
        (SENTINEL_DELAY, sentinel.clone()),
        Some(&kwargs),
    );
    if let Err(err) = scheduled {
        if !err.is_instance_of::<PyTypeError>(py) {
            return Err(err);
        }
        event_loop.call_method1("call_later", (SENTINEL_DELAY, sentinel))?;
    }
    let entry = Bound::new(
        py,
        LoopEntry {
            token: token.clone(),
        },
    )?;
    loops.set_item(event_loop, entry)?;
    Ok(token)
}

/// Cancels the loop's source with [`CancelReason::Shutdown`] when dropped.
struct ShutdownOnDrop(CancelSource);

impl Drop for ShutdownOnDrop {
    fn drop(&mut self) {
        self.0.cancel(CancelReason::Shutdown);
    }
}
