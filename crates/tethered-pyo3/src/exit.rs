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
//! # Invariants
//!
//! 1. A delivery attaches only while it holds a [`Pass`], and no pass is handed out once
//!    the gate is closed.
//! 2. `close` returns once no pass is held, or after [`DRAIN_LIMIT`] (a delivery stuck
//!    attaching is then left behind, as a best effort).

use std::sync::{Condvar, LazyLock, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyCFunction;
use tethered::{CancelReason, CancelSource, CancelToken};

/// How long the exit hook waits for deliveries in flight.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// The root of every job's cancellation: the event loops' tokens are its children.
static EXIT: LazyLock<CancelSource> = LazyLock::new(CancelSource::new);

static GATE: Gate = Gate::new();

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
    py.detach(|| GATE.close());
}

/// Whether the exit hook has run: the interpreter is exiting, its `atexit` handlers run. A job
/// started now would be cancelled at once and its outcome dropped at the closed gate, so its
/// awaiter would wait forever: the spawning functions refuse it instead.
pub(crate) fn exiting() -> bool {
    EXIT.is_cancelled()
}

/// Enter before attaching to deliver an outcome; `None` once the interpreter is exiting.
pub(crate) fn enter() -> Option<Pass> {
    GATE.enter()
}

/// The right to attach to the interpreter, held while one outcome is delivered.
#[derive(Debug)]
pub(crate) struct Pass(());

impl Drop for Pass {
    fn drop(&mut self) {
        GATE.leave();
    }
}

struct Gate {
    state: Mutex<GateState>,
    drained: Condvar,
}

struct GateState {
    closed: bool,
    passes: usize,
}

impl Gate {
    const fn new() -> Self {
        Gate {
            state: Mutex::new(GateState {
                closed: false,
                passes: 0,
            }),
            drained: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        // The state is two plain fields, consistent after any panic.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn enter(&self) -> Option<Pass> {
        let mut state = self.lock();
        if state.closed {
            return None;
        }
        state.passes += 1;
        Some(Pass(()))
    }

    fn leave(&self) {
        let mut state = self.lock();
        state.passes -= 1;
        if state.closed && state.passes == 0 {
            self.drained.notify_all();
        }
    }

    fn close(&self) {
        let deadline = Instant::now() + DRAIN_LIMIT;
        let mut state = self.lock();
        state.closed = true;
        while state.passes > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            state = self
                .drained
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }
}
