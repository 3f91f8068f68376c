//! What the loom models in `loom-tests/` drive: a job's [`Tie`] to its future and the exit
//! [`Gate`], with Python replaced by a record of what would be delivered. Built only under
//! `--cfg tethered_loom`; not part of the API.

use std::sync::Arc;
use std::task::{Wake, Waker};
use std::time::Duration;

use tethered::{AbortableNative, CancelReason, CancelToken, NativeError};

use crate::gate::Gate;
use crate::sync::{self, Mutex};
use crate::tie::Tie;

/// A job tied to a future, whose deliveries are recorded instead of handed to Python.
#[allow(missing_debug_implementations)]
pub struct ModelTie<T: Send + 'static> {
    tie: Tie<T>,
    delivered: Mutex<Vec<Result<T, NativeError<T>>>>,
}

impl<T: Send + 'static> ModelTie<T> {
    /// Ties `job` to `loop_token`, and polls it once, as `Link::tie` does.
    pub fn new(job: AbortableNative<T>, loop_token: &CancelToken) -> Arc<Self> {
        let tie = Arc::new(ModelTie {
            tie: Tie::new(job, loop_token),
            delivered: Mutex::new(Vec::new()),
        });
        tie.poll();
        tie
    }

    /// The future was cancelled (or freed): what its done callback does.
    pub fn future_cancelled(&self, reason: CancelReason) {
        self.tie.unwanted();
        self.tie.cancel(reason, None);
    }

    /// The outcomes delivered so far.
    pub fn take_delivered(&self) -> Vec<Result<T, NativeError<T>>> {
        std::mem::take(&mut *sync::lock(&self.delivered))
    }

    fn poll(self: &Arc<Self>) {
        let waker = Waker::from(self.clone());
        if let Some(result) = self.tie.poll(&waker) {
            sync::lock(&self.delivered).push(result);
        }
    }
}

impl<T: Send + 'static> Wake for ModelTie<T> {
    fn wake(self: Arc<Self>) {
        self.poll();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.poll();
    }
}

/// The exit gate.
#[derive(Debug)]
pub struct ModelGate(Gate);

impl ModelGate {
    /// An open gate.
    pub fn new() -> Self {
        ModelGate(Gate::new())
    }

    /// A delivery: enters, runs `attached` while it holds the pass; `false` if the gate was
    /// closed.
    pub fn deliver(&self, attached: impl FnOnce()) -> bool {
        match self.0.enter() {
            Some(_pass) => {
                attached();
                true
            }
            None => false,
        }
    }

    /// The exit hook: closes the gate and waits for the passes held; whether they all came
    /// back.
    pub fn close(&self) -> bool {
        self.0.close(Duration::from_secs(3600))
    }

    /// Whether the gate is closed.
    pub fn is_closed(&self) -> bool {
        self.0.is_closed()
    }
}

impl Default for ModelGate {
    fn default() -> Self {
        Self::new()
    }
}
