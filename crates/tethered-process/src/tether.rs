//! [`Tether`]: what the waiter's closure owns. If the closure is dropped without having reaped
//! the child (a cancel while it was still queued in a pool, a pool that shut down, a panic),
//! its `Drop` makes sure the child is stopped and reaped all the same.

use std::sync::Arc;

use tethered::CancelToken;

use crate::handoff::Handoff;
use crate::live::Live;
use crate::output::ProcessOutput;

/// An unreaped child on its way to the thread that waits for it.
pub(crate) struct Tether {
    /// `None` once run.
    live: Option<Live>,
    /// Where an unrun waiter's child goes to be rescued; `None` for the rescue itself, whose
    /// drop (no thread could be started for it) kills and reaps on the spot.
    handoff: Option<Arc<Handoff>>,
}

impl Tether {
    /// The tether of a job's waiter.
    pub(crate) fn waiter(live: Live, handoff: Arc<Handoff>) -> Tether {
        Tether {
            live: Some(live),
            handoff: Some(handoff),
        }
    }

    /// The tether of a rescue: it stops the child at once when run.
    pub(crate) fn rescue(live: Live) -> Tether {
        Tether {
            live: Some(live),
            handoff: None,
        }
    }

    /// Waits for the child, stops it once `token` is cancelled (at once for `None`), reaps it.
    pub(crate) fn run(mut self, token: Option<&CancelToken>) -> ProcessOutput {
        let live = self
            .live
            .as_mut()
            .expect("a tether is made with its child and run once");
        let output = live.run(token);
        // Reaped: nothing left for `Drop` to do.
        self.live = None;
        output
    }
}

impl Drop for Tether {
    fn drop(&mut self) {
        let Some(mut live) = self.live.take() else {
            return;
        };
        if !live.is_unreaped() {
            return;
        }
        match &self.handoff {
            Some(handoff) => handoff.orphaned(live),
            None => live.kill_now(),
        }
    }
}
