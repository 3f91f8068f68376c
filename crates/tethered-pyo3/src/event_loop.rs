//! The running event loop, and a token per loop that is cancelled with
//! [`CancelReason::Shutdown`] when the loop closes.
//!
//! Event loops have no close hook, but asyncio's drop everything they have scheduled when they
//! close (`BaseEventLoop.close` clears its ready queue and its timers), and everything they
//! hold when they are freed. So the first job on a loop schedules a *sentinel*: a timer due in
//! about 30 years whose callback owns the loop's cancel source and cancels it when dropped,
//! if the loop is closed or gone by then. The loop holds the only reference to it, so the
//! sentinel goes when the loop lets go of its timers: at `close()`, or when a loop that was
//! never closed is freed. A sentinel dropped while its loop is still open (a fake clock made
//! it fall due, or code cancelled the loop's timers) hands the source to a fresh one instead,
//! so the loop's jobs go on. It costs
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
    arm_sentinel(
        event_loop,
        ShutdownOnDrop {
            source: Some(source),
            event_loop: event_loop
                .py()
                .import("weakref")?
                .call_method1("ref", (event_loop,))?
                .unbind(),
        },
    )?;
    let entry = Bound::new(
        py,
        LoopEntry {
            token: token.clone(),
        },
    )?;
    loops.set_item(event_loop, entry)?;
    Ok(token)
}

/// Schedules the sentinel that carries `shutdown` on `event_loop`.
fn arm_sentinel(event_loop: &Bound<'_, PyAny>, shutdown: ShutdownOnDrop) -> PyResult<()> {
    let py = event_loop.py();
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
    Ok(())
}

/// Cancels the loop's source with [`CancelReason::Shutdown`] when dropped, if the loop closed
/// or is gone: a loop drops its timers when it closes, and all it holds when it is freed. A
/// loop still open drops it for another reason: a fake clock (looptime) made it fall due and
/// run, or code cancelled the loop's scheduled timers. Then the loop's jobs go on, and a fresh
/// sentinel takes the source over.
struct ShutdownOnDrop {
    source: Option<CancelSource>,
    /// A weak reference to the loop: the sentinel must not keep its loop alive.
    event_loop: Py<PyAny>,
}

impl Drop for ShutdownOnDrop {
    fn drop(&mut self) {
        let Some(source) = self.source.take() else {
            return;
        };
        let rearmed = Python::try_attach(|py| {
            let event_loop = self.event_loop.bind(py).call0().ok()?;
            if event_loop.is_none() {
                return None; // freed
            }
            let closed = event_loop
                .call_method0("is_closed")
                .and_then(|closed| closed.is_truthy())
                .unwrap_or(true);
            if closed {
                return None;
            }
            let weak = self.event_loop.clone_ref(py);
            let shutdown = ShutdownOnDrop {
                source: Some(source.clone()),
                event_loop: weak,
            };
            arm_sentinel(&event_loop, shutdown).ok()
        })
        .flatten();
        if rearmed.is_none() {
            source.cancel(CancelReason::Shutdown);
        }
    }
}
