//! The one place that names the synchronisation primitives of the supervisor's and the pool's
//! shared state: `std`'s, or [loom]'s under `--cfg tethered_loom`, so the loom models in
//! `loom-tests/` explore the real code, as the core's `sync` module does for the core.
//!
//! [loom]: https://docs.rs/loom

#[cfg(not(tethered_loom))]
pub(crate) use std::sync::{
    Condvar, Mutex, MutexGuard,
    atomic::{AtomicBool, Ordering},
};

#[cfg(tethered_loom)]
pub(crate) use loom::sync::{
    Condvar, Mutex, MutexGuard,
    atomic::{AtomicBool, Ordering},
};

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits on `condvar` for at most `timeout`, ignoring poison. Under loom the wait never times
/// out (loom does not model time): a model that relies on a wake-up which never comes is
/// reported as a deadlock instead of passing by timing out.
pub(crate) fn wait_timeout<'a, T>(
    condvar: &Condvar,
    guard: MutexGuard<'a, T>,
    timeout: std::time::Duration,
) -> MutexGuard<'a, T> {
    match condvar.wait_timeout(guard, timeout) {
        Ok((guard, _)) => guard,
        Err(poisoned) => poisoned.into_inner().0,
    }
}
