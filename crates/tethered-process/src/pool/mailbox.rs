//! [`Seat`]: the mailbox of one seat's thread, through which a dispatcher hands it a task or
//! tells it to close.
//!
//! # Invariants
//!
//! 1. A seat is on the pool's idle list only with an empty slot, and a dispatcher hands a task
//!    only to a seat it took off that list (under the pool's lock): no task is ever
//!    overwritten.
//! 2. Lock order: the pool's lock before a seat's, never after.

use crate::sync::{self, Condvar, Mutex, MutexGuard};

/// What a dispatcher handed a seat.
pub(crate) enum Slot<T> {
    Empty,
    Task(T),
    Close,
}

/// The mailbox of one seat's thread.
pub(crate) struct Seat<T> {
    slot: Mutex<Slot<T>>,
    ready: Condvar,
}

impl<T> Seat<T> {
    pub(crate) fn new() -> Seat<T> {
        Seat {
            slot: Mutex::new(Slot::Empty),
            ready: Condvar::new(),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Slot<T>> {
        sync::lock(&self.slot)
    }

    /// Hands `task` to the seat's thread, which a dispatcher took off the idle list: its slot
    /// is empty (invariant 1).
    pub(crate) fn give(&self, task: T) {
        let replaced = std::mem::replace(&mut *self.lock(), Slot::Task(task));
        debug_assert!(
            matches!(replaced, Slot::Empty),
            "a listed seat has an empty slot"
        );
        self.ready.notify_one();
    }

    /// Tells the seat's thread to end (once its slot holds no task).
    pub(crate) fn close(&self) {
        let mut slot = self.lock();
        if matches!(*slot, Slot::Empty) {
            *slot = Slot::Close;
        }
        drop(slot);
        self.ready.notify_one();
    }

    /// Takes what the slot holds, leaving it empty.
    pub(crate) fn take(&self) -> Slot<T> {
        std::mem::replace(&mut *self.lock(), Slot::Empty)
    }

    /// Takes what the slot holds, waiting up to `timeout` for something to arrive.
    pub(crate) fn wait(&self, timeout: std::time::Duration) -> Slot<T> {
        let mut slot = self.lock();
        if matches!(*slot, Slot::Empty) {
            slot = sync::wait_timeout(&self.ready, slot, timeout);
        }
        std::mem::replace(&mut *slot, Slot::Empty)
    }
}
