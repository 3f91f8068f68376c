//! [`Seat`]: the mailbox of one seat's thread, through which a dispatcher hands it a task or
//! tells it to close.
//!
//! # Invariants
//!
//! 1. A seat is on the pool's idle list only with an empty slot, and a dispatcher hands a task
//!    only to a seat it took off that list (under the pool's lock): no task is ever
//!    overwritten.
//! 2. Lock order: the pool's lock before a seat's, never after.
//! 3. `filled` says whether the slot holds something, written under the seat's lock: the
//!    seat's thread watches it for a while before it sleeps (a task handed over just after the
//!    last one is taken without a wake-up), and the lock decides.

use std::time::Duration;

use crate::sync::{self, AtomicBool, Condvar, Mutex, MutexGuard, Ordering};

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
    /// Whether `slot` holds a task or a close (invariant 3).
    filled: AtomicBool,
}

impl<T> Seat<T> {
    pub(crate) fn new() -> Seat<T> {
        Seat {
            slot: Mutex::new(Slot::Empty),
            ready: Condvar::new(),
            filled: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Slot<T>> {
        sync::lock(&self.slot)
    }

    /// Keeps `filled` in step with `slot`, under the seat's lock (invariant 3).
    fn mark(&self, slot: &Slot<T>) {
        // Relaxed: a hint for the spinning thread, which takes the lock before it looks.
        self.filled
            .store(!matches!(slot, Slot::Empty), Ordering::Relaxed);
    }

    /// Hands `task` to the seat's thread, which a dispatcher took off the idle list: its slot
    /// is empty (invariant 1).
    pub(crate) fn give(&self, task: T) {
        let mut slot = self.lock();
        let replaced = std::mem::replace(&mut *slot, Slot::Task(task));
        self.mark(&slot);
        drop(slot);
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
            self.mark(&slot);
        }
        drop(slot);
        self.ready.notify_one();
    }

    /// Takes what the slot holds, leaving it empty.
    pub(crate) fn take(&self) -> Slot<T> {
        let mut slot = self.lock();
        self.mark(&Slot::Empty);
        std::mem::replace(&mut *slot, Slot::Empty)
    }

    /// Takes what the slot holds, waiting up to `timeout` for something to arrive: watching
    /// `filled` for `spin` (at most `timeout`), then asleep.
    pub(crate) fn wait(&self, spin: Duration, timeout: Duration) -> Slot<T> {
        // Not under loom: a model would branch on every load of the spin; the lock decides.
        #[cfg(not(tethered_loom))]
        // Relaxed: a hint (invariant 3).
        tethered::__private::spin_until(spin.min(timeout), || self.filled.load(Ordering::Relaxed));
        #[cfg(tethered_loom)]
        let _ = spin;
        let mut slot = self.lock();
        if matches!(*slot, Slot::Empty) {
            slot = sync::wait_timeout(&self.ready, slot, timeout);
        }
        self.mark(&Slot::Empty);
        std::mem::replace(&mut *slot, Slot::Empty)
    }
}

#[cfg(all(test, not(tethered_loom)))]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use super::*;

    /// What a seat's thread, spinning for up to 30 s, finds when `hand` fills its slot 20 ms
    /// in, and how long it took to find it.
    fn found_while_spinning(hand: fn(&Seat<u32>)) -> (Slot<u32>, Duration) {
        let seat = Arc::new(Seat::new());
        let waiter = {
            let seat = Arc::clone(&seat);
            std::thread::spawn(move || {
                let started = Instant::now();
                let slot = seat.wait(Duration::from_secs(30), Duration::from_secs(30));
                (slot, started.elapsed())
            })
        };
        std::thread::sleep(Duration::from_millis(20));
        hand(&seat);
        waiter.join().unwrap()
    }

    #[test]
    fn a_task_or_a_close_given_during_the_spin_ends_it() {
        let (slot, took) = found_while_spinning(|seat| seat.give(7));
        assert!(matches!(slot, Slot::Task(7)));
        assert!(
            took < Duration::from_secs(5),
            "the spin missed the task: {took:?}"
        );
        let (slot, took) = found_while_spinning(Seat::close);
        assert!(matches!(slot, Slot::Close));
        assert!(
            took < Duration::from_secs(5),
            "the spin missed the close: {took:?}"
        );
    }

    #[test]
    fn the_mark_follows_the_slot() {
        let filled = |seat: &Seat<u32>| seat.filled.load(Ordering::Relaxed);
        let seat = Seat::new();
        assert!(!filled(&seat));
        seat.give(1);
        assert!(filled(&seat));
        assert!(matches!(seat.take(), Slot::Task(1)));
        assert!(
            !filled(&seat),
            "a taken slot still looks filled to the next spin"
        );
        seat.give(2);
        assert!(matches!(
            seat.wait(Duration::ZERO, Duration::ZERO),
            Slot::Task(2)
        ));
        assert!(!filled(&seat));
        seat.close();
        assert!(filled(&seat));
    }
}
