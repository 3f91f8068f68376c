//! The one place that names the crate's synchronisation primitives (the open calls of a
//! connection, the sessions of an HTTP server): `std`'s. No state machine here races on an
//! atomic: each is a map under a lock, changed whole.

pub(crate) use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Locks `mutex`, ignoring poison: no code of this crate panics while it holds one of its
/// locks (no user code runs under them), so the state is whole whatever poisoned it.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
