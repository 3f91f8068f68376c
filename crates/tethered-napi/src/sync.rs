//! The one place that names the synchronisation primitives of the crate's shared state (a job's
//! settle-once slot, the environment's count of running jobs, the pool's queue): `std`'s, or [loom]'s under
//! `--cfg tethered_loom`, as the core's `sync` module does.
//!
//! [loom]: https://docs.rs/loom

#[cfg(not(tethered_loom))]
pub(crate) use std::sync::{
    Condvar, Mutex, MutexGuard,
    atomic::{AtomicUsize, Ordering},
};

#[cfg(tethered_loom)]
pub(crate) use loom::sync::{
    Condvar, Mutex, MutexGuard,
    atomic::{AtomicUsize, Ordering},
};

/// Locks `mutex`, ignoring poison: nothing of the crate panics while holding one of its locks,
/// so the state is consistent whatever poisoned it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
