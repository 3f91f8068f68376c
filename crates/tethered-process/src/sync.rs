//! The one place that names the synchronisation primitives of the supervisor's shared state:
//! `std`'s, or [loom]'s under `--cfg tethered_loom`, so the loom models in `loom-tests/`
//! explore the real code, as the core's `sync` module does for the core.
//!
//! [loom]: https://docs.rs/loom

#[cfg(not(tethered_loom))]
pub(crate) use std::sync::{Mutex, MutexGuard};

#[cfg(tethered_loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard};

/// Locks `mutex`, ignoring poison: no code of this crate panics while it holds a lock, so the
/// state is consistent whatever poisoned it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
