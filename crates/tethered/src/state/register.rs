//! Registering on a token and leaving it: callbacks (run on cancel, or inline once cancelled,
//! or dropped once sealed) and the wakers of pending `cancelled()` futures.

use std::task::Waker;

use super::{ACTIVE, CANCELLED_BIT, CANCELLING, Callback, Key, Registered, SEALED, TokenState};
use crate::contain::{drop_contained, run_contained};
use crate::reason::CancelReason;
use crate::stats;
use crate::sync::{self, thread};

impl TokenState {
    /// Registers `callback`. If the token is cancelled it runs before this returns, after any
    /// callbacks still running from the cancel (in order: see invariant 2); if sealed, it is
    /// dropped unrun.
    pub(crate) fn register_callback(&self, callback: Callback) -> Registered {
        let mut shared = sync::lock(&self.shared);
        let flag = self.flag_under_lock();
        if flag == ACTIVE || flag == CANCELLING {
            let key = shared.next_key();
            shared.regs().callbacks.push(key, callback);
            return Registered::Pending(key);
        }
        let stop = self
            .reason_now()
            .map(|reason| (reason, shared.cause.clone()));
        drop(shared);
        match stop {
            Some((reason, cause)) => {
                if run_contained(|| callback.call(reason, cause.as_ref())).is_none() {
                    stats::callback_panicked();
                }
            }
            None => drop_contained(callback),
        }
        Registered::Settled
    }

    /// Deregisters the callback under `key`. If it is running on another thread, waits until it
    /// has returned; if it is running on this thread (a guard dropped inside its own callback),
    /// returns at once.
    pub(crate) fn deregister_callback(&self, key: Key) {
        let mut shared = sync::lock(&self.shared);
        if let Some(callback) = shared.regs.as_mut().and_then(|r| r.callbacks.remove(key)) {
            // Dropping the closure is user code (invariant 5).
            drop(shared);
            drop_contained(callback);
            return;
        }
        let me = thread::current().id();
        while let Some((running, on)) = shared.running() {
            if running != key || on == me {
                return;
            }
            shared = self.sleep(shared, None);
        }
    }

    /// Stores `waker` to be woken on cancel (replacing the one under `key`, if any), or returns
    /// the reason if the token is already cancelled. A sealed token stores nothing: it never
    /// wakes anyone.
    pub(crate) fn register_waker(
        &self,
        key: &mut Option<Key>,
        waker: &Waker,
    ) -> Result<(), CancelReason> {
        // Cloning a waker is the executor's code: it happens with the lock released
        // (invariant 5), and only when the stored waker would not wake the same task.
        let mut fresh: Option<Waker> = None;
        loop {
            let mut shared = sync::lock(&self.shared);
            // The lifecycle first: a bare token becomes active here, so that a cancel takes the
            // lock and wakes the waker stored below (a lock-free cancel would not).
            let flag = self.flag_under_lock();
            let done = if flag & CANCELLED_BIT != 0 {
                self.reason_now().map(Err)
            } else if flag == SEALED {
                Some(Ok(()))
            } else {
                let stored = key.and_then(|key| shared.regs.as_mut()?.wakers.get_mut(key));
                stored
                    .is_some_and(|stored| stored.will_wake(waker))
                    .then_some(Ok(()))
            };
            if let Some(done) = done {
                drop(shared);
                drop_contained(fresh);
                return done;
            }
            let Some(new) = fresh.take() else {
                drop(shared);
                fresh = Some(waker.clone());
                continue;
            };
            let replaced = match key.and_then(|key| shared.regs.as_mut()?.wakers.get_mut(key)) {
                Some(stored) => Some(std::mem::replace(stored, new)),
                None => {
                    // A key made now, under the lock, is the largest yet (the list stays sorted).
                    let fresh_key = shared.next_key();
                    *key = Some(fresh_key);
                    shared.regs().wakers.push(fresh_key, new);
                    None
                }
            };
            drop(shared);
            // A waker's drop is foreign code too: never under our lock (invariant 5).
            drop_contained(replaced);
            return Ok(());
        }
    }

    /// Forgets the waker under `key` (its future was dropped).
    pub(crate) fn deregister_waker(&self, key: Key) {
        let waker = sync::lock(&self.shared)
            .regs
            .as_mut()
            .and_then(|regs| regs.wakers.remove(key));
        drop_contained(waker);
    }

    /// Whether the callback under `key` is registered and has not started.
    pub(crate) fn is_callback_pending(&self, key: Key) -> bool {
        sync::lock(&self.shared)
            .regs
            .as_ref()
            .is_some_and(|regs| regs.callbacks.contains(key))
    }

    /// Callbacks not yet run, pending `WaitCancelled` wakers, and linked children.
    pub(crate) fn registrations(&self) -> usize {
        let shared = sync::lock(&self.shared);
        let (callbacks, wakers) = shared
            .regs
            .as_ref()
            .map_or((0, 0), |regs| (regs.callbacks.len(), regs.wakers.len()));
        callbacks + wakers + shared.children.len()
    }

    /// Gives the token its [`FinishedCheck`] (invariant 10); a later one replaces it. A token
    /// no longer active (cancelled or sealed) keeps none: its cancel was decided.
    pub(crate) fn set_finished_check(&self, check: super::FinishedCheck) {
        let mut shared = sync::lock(&self.shared);
        if self.flag_under_lock() != ACTIVE {
            return;
        }
        let replaced = shared.regs().finished.replace(check);
        // A check is the bridge's closure: dropped with no lock held (invariant 5).
        drop(shared);
        drop_contained(replaced);
    }
}
