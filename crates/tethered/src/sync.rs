//! The one place that names synchronisation primitives.
//!
//! Every atomic, lock, condition variable and thread handle the crate uses comes from here. In
//! normal builds they are `std`'s; under `--cfg tethered_loom` they are [loom]'s, so the loom
//! models in `loom-tests/` explore every interleaving of the real code, not of a copy.
//!
//! Two things stay `std` under loom, on purpose:
//!
//! - [`Arc`] (and so `Weak`): `loom::sync::Arc` has no `Weak`, and child tokens need one (a parent's
//!   callback must not keep its child alive). Reference counting is not what the models check; the
//!   atomics and locks the shared state is made of are loom's either way, and the models assert
//!   the absence of leaks explicitly (for example that a parent's link list ends empty).
//! - The process-wide statistics in `stats.rs`: a `static` cannot hold a loom atomic. See there.
//!
//! The cfg is `tethered_loom`, not `loom`: a global `--cfg loom` would also switch tokio and
//! other dependencies into their own loom modes.
//!
//! [loom]: https://docs.rs/loom

pub(crate) use std::sync::{Arc, Weak};

#[cfg(not(tethered_loom))]
pub(crate) use std::{
    sync::{
        Condvar, Mutex, MutexGuard,
        atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicUsize, Ordering, fence},
    },
    thread,
};

#[cfg(tethered_loom)]
pub(crate) use loom::{
    sync::{
        Condvar, Mutex, MutexGuard,
        atomic::{AtomicBool, AtomicU8, AtomicU32, AtomicUsize, Ordering, fence},
    },
    thread,
};

/// How many threads the machine runs at once ([`std::thread::available_parallelism`], 1 if
/// unknown), read once: it reads the process's cgroup files. A plain `std` value, also under
/// loom: nothing a model interleaves.
pub(crate) fn parallelism() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS
        .get_or_init(|| std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get))
}

/// The next number of a process-wide sequence, which orders the cancels: one taken before
/// another (on any thread) is smaller. A plain `std` atomic, also under loom: a `static`
/// cannot hold a loom atomic (as for `stats.rs`), and the number only tells which of two cancels
/// began first; what each cancel does to the tokens is decided under their locks, which loom
/// models.
///
/// The numbers are 32 bits, to keep a token's state small, and wrap: compare two with
/// [`sequence_before`], which is right for any two taken fewer than 2^31 cancels apart (the
/// cancels a token's walks compare are running at the same time).
pub(crate) fn next_sequence() -> u32 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    // ORDERING: Relaxed: all read-modify-writes of one atomic are totally ordered, and a cancel
    // that another one caused (through a waker, a callback, a lock) takes its number after it
    // in that order. Nothing else is published through the number.
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// Whether sequence number `a` was taken before `b` (see [`next_sequence`]).
pub(crate) fn sequence_before(a: u32, b: u32) -> bool {
    // Two's complement distance: negative when `a` is behind `b` by less than half the range.
    a.wrapping_sub(b) > u32::MAX / 2
}

/// Locks `mutex`, ignoring poison.
///
/// No code in this crate panics while it holds one of its locks (user closures and callbacks
/// always run with every lock released), so a poisoned lock can only come from a panic in the
/// allocator or the like; the protected state is still consistent and the lock stays usable.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The data of a mutex nobody else can reach (`&mut`), ignoring poison (see [`lock`]).
pub(crate) fn get_mut<T>(mutex: &mut Mutex<T>) -> &mut T {
    mutex
        .get_mut()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits on `condvar`, ignoring poison (see [`lock`]).
pub(crate) fn wait<'a, T>(condvar: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    condvar
        .wait(guard)
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits on `condvar` for at most `timeout`, ignoring poison (see [`lock`]).
///
/// Under loom the wait never times out (loom does not model time): a model that relies on a
/// wake-up which never comes is reported as a deadlock instead of passing by timing out.
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

/// A plain `std` mutex for data that is never raced on, only made `Sync` (a panic payload in an
/// error value), or that the process-wide timer thread touches (which is no loom thread). It
/// stays `std` under loom because such values may outlive a model or leave it.
pub(crate) type DataMutex<T> = std::sync::Mutex<T>;

/// Locks a [`DataMutex`], ignoring poison (see [`lock`]).
pub(crate) fn lock_data<T>(mutex: &DataMutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
