//! [`Gate`]: who may attach to the interpreter to deliver an outcome, and the exit hook's wait
//! for the deliveries in flight. Plain state, apart from Python, so that loom models it.
//!
//! # States
//!
//! ```text
//!  Open { passes: n } ──close──▶ Closed { passes: n } ──last pass left──▶ Closed { passes: 0 }
//! ```
//!
//! # Invariants
//!
//! 1. A delivery attaches only while it holds a [`Pass`], and no pass is handed out once the
//!    gate is closed.
//! 2. `close` returns once no pass is held, or after its limit (a delivery stuck attaching is
//!    then left behind, as a best effort).

use std::time::{Duration, Instant};

use crate::sync::{self, Condvar, Mutex, MutexGuard};

/// The gate (see the module docs).
pub(crate) struct Gate {
    state: Mutex<GateState>,
    drained: Condvar,
}

struct GateState {
    closed: bool,
    passes: usize,
}

/// The right to attach to the interpreter, held while one outcome is delivered.
#[derive(Debug)]
pub(crate) struct Pass<'a>(&'a Gate);

impl Drop for Pass<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = self.lock();
        f.debug_struct("Gate")
            .field("closed", &state.closed)
            .field("passes", &state.passes)
            .finish()
    }
}

impl Gate {
    pub(crate) fn new() -> Self {
        Gate {
            state: Mutex::new(GateState {
                closed: false,
                passes: 0,
            }),
            drained: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, GateState> {
        sync::lock(&self.state)
    }

    /// A pass, unless the gate is closed.
    pub(crate) fn enter(&self) -> Option<Pass<'_>> {
        let mut state = self.lock();
        if state.closed {
            return None;
        }
        state.passes += 1;
        Some(Pass(self))
    }

    fn leave(&self) {
        let mut state = self.lock();
        state.passes -= 1;
        if state.closed && state.passes == 0 {
            self.drained.notify_all();
        }
    }

    /// Closes the gate and waits up to `limit` for the passes held to be given back; whether
    /// they all were.
    pub(crate) fn close(&self, limit: Duration) -> bool {
        let deadline = Instant::now().checked_add(limit);
        let mut state = self.lock();
        state.closed = true;
        while state.passes > 0 {
            let left = deadline.map_or(Duration::MAX, |deadline| {
                deadline.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                return false;
            }
            state = self
                .drained
                .wait_timeout(state, left)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
        true
    }

    /// Whether the gate is closed.
    #[cfg(tethered_loom)]
    pub(crate) fn is_closed(&self) -> bool {
        self.lock().closed
    }
}
