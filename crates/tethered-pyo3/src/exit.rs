//! Interpreter exit: an `atexit` hook cancels every job still running with
//! [`CancelReason::Shutdown`], and a gate keeps native threads away from the interpreter from
//! then on.
//!
//! A thread that attaches to CPython while it finalizes can crash the process or be stopped in
//! the middle of Rust code (`PyThread_exit_thread`), and `Python::try_attach` only detects
//! finalization from 3.13 on. `atexit` callbacks run before finalization starts, so the hook
//! closes the [`Gate`] there: it waits (detached, so they can attach) for the deliveries in
//! flight, and later ones find it closed and drop their outcome without touching Python
//! (pyo3 defers the reference drops).
//!
//! The gate's states and invariants are in `gate.rs`; the hook waits at most [`DRAIN_LIMIT`].

use std::sync::LazyLock;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyCFunction;
use tethered::{CancelReason, CancelSource, CancelToken};

use crate::gate::{Gate, Pass};

/// How long the exit hook waits for deliveries in flight.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// The root of every job's cancellation: the event loops' tokens are its children.
static EXIT: LazyLock<CancelSource> = LazyLock::new(CancelSource::new);

static GATE: LazyLock<Gate> = LazyLock::new(Gate::new);

/// Set once the hook is registered with `atexit`.
static HOOKED: PyOnceLock<()> = PyOnceLock::new();

/// A token cancelled with [`CancelReason::Shutdown`] when the interpreter exits; registers the
/// `atexit` hook on first use.
pub(crate) fn exit_token(py: Python<'_>) -> PyResult<CancelToken> {
    HOOKED.get_or_try_init(py, || {
        let hook = PyCFunction::new_closure(
            py,
            Some(c"tethered_pyo3_exit"),
            Some(c"Cancels the native jobs still running; the interpreter is exiting."),
            |args, _kwargs| on_exit(args.py()),
        )?;
        py.import("atexit")?.call_method1("register", (hook,))?;
        Ok::<_, PyErr>(())
    })?;
    Ok(EXIT.token())
}

fn on_exit(py: Python<'_>) {
    EXIT.cancel(CancelReason::Shutdown);
    py.detach(|| GATE.close(DRAIN_LIMIT));
}

/// Whether the exit hook has run: the interpreter is exiting, its `atexit` handlers run. A job
/// started now would be cancelled at once and its outcome dropped at the closed gate, so its
/// awaiter would wait forever: the spawning functions refuse it instead.
pub(crate) fn exiting() -> bool {
    EXIT.is_cancelled()
}

/// Enter before attaching to deliver an outcome; `None` once the interpreter is exiting.
pub(crate) fn enter() -> Option<Pass<'static>> {
    GATE.enter()
}
