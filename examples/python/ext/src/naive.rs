//! [`NaiveSpinner`]: native work the usual way, for the tests' "before" half: a blocking
//! function run with `loop.run_in_executor`, which stops only when someone calls `stop()`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use pyo3::prelude::*;

/// A blocking spin loop with a stop flag that only its owner sets.
#[pyclass(frozen, module = "tethered_example")]
#[derive(Default)]
pub(crate) struct NaiveSpinner {
    stop: AtomicBool,
    running: AtomicBool,
    steps: AtomicU64,
}

#[pymethods]
impl NaiveSpinner {
    #[new]
    fn new() -> Self {
        NaiveSpinner::default()
    }

    /// Spins without the GIL until `stop()`; returns the steps it made. Nothing that happens
    /// to the caller (a cancelled task, a timeout, a closed loop) reaches it.
    fn run(&self, py: Python<'_>) -> u64 {
        py.detach(|| {
            // ORDERING: SeqCst throughout: a test reads these flags from another thread and
            // wants them in the order they were set; speed does not matter here.
            self.running.store(true, Ordering::SeqCst);
            let mut steps = 0;
            while !self.stop.load(Ordering::SeqCst) {
                self.steps.fetch_add(1, Ordering::Relaxed);
                steps += 1;
                std::hint::spin_loop();
            }
            self.running.store(false, Ordering::SeqCst);
            steps
        })
    }

    /// Asks `run` to return.
    fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
    }

    /// `run` is spinning right now.
    #[getter]
    fn running(&self) -> bool {
        self.running.load(Ordering::SeqCst)
    }

    /// Steps made so far.
    #[getter]
    fn steps(&self) -> u64 {
        self.steps.load(Ordering::Relaxed)
    }
}
