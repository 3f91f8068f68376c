//! Helpers for the loom models in `tests/`.
//!
//! Each model is written once and run through [`model`]: under `--cfg tethered_loom` it is
//! explored by [`loom::model`] (every interleaving, up to the preemption bound), otherwise it runs
//! once on plain `std` threads as a quick smoke test.

/// Runs `f` as a loom model (under `--cfg tethered_loom`) or once, plainly.
pub fn model<F>(f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    #[cfg(tethered_loom)]
    loom::model(f);
    #[cfg(not(tethered_loom))]
    f();
}

/// `std::thread` or `loom::thread`, whichever [`model`] runs on.
pub mod thread {
    #[cfg(tethered_loom)]
    pub use loom::thread::{JoinHandle, spawn, yield_now};
    #[cfg(not(tethered_loom))]
    pub use std::thread::{JoinHandle, spawn, yield_now};
}
