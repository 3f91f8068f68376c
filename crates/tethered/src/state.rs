//! The shared state behind a [`CancelSource`](crate::CancelSource) and its tokens.
//!
//! # Invariants
//!
//! 1. `flag` goes from [`ACTIVE`] to [`CANCELLED`] exactly once, inside the critical section of
//!    `shared` that also stores `reason`. So whoever sees `CANCELLED` and then takes the lock
//!    finds the reason; whoever holds the lock sees `reason.is_some()` exactly when the flag is set.
//! 2. After the flag is set, nothing is added to `callbacks` or `wakers`: registrations check
//!    `reason` under the lock and run (or resolve) inline instead.
//! 3. A callback is owned by exactly one of: the `callbacks` map (registered, not yet run), the
//!    cancelling thread (taken out of the map, running; `running` names its key and thread), or
//!    nobody (it has run, or its guard removed it).
//! 4. Only the thread whose `cancel` won runs callbacks, one at a time, so at most one is running.
//! 5. No user code (callback, waker, drop of a callback) ever runs while `shared` is locked, so
//!    user code may call back into any method of the token without deadlocking. (A waker is
//!    cloned under the lock, as every executor expects; it is never woken or dropped there.)
//! 6. A thread blocks on `changed` only through `TokenState::sleep`: in the critical section
//!    in which it found what it waits for still false, it adds itself to `sleepers`, and it
//!    removes itself under the lock once awake. Whoever makes such a condition true (a cancel, a
//!    callback returning) reads `sleepers` in the critical section that makes it true and
//!    notifies `changed` only if it is not zero: a sleeper counted then is woken (std's and
//!    loom's condition variables both release the lock atomically with starting to wait), and
//!    one not yet counted takes the lock later and finds its condition true. So a cancel that
//!    nobody waits for in `wait`, `wait_timeout` or a guard drop makes no futex system call.
//!
//! # Lock order
//!
//! There is one lock per token. A cancel takes its own lock, releases it, and only then runs
//! callbacks, which may take other tokens' locks (children). No code path holds two token locks
//! at once.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::task::Waker;
use std::time::{Duration, Instant};

use crate::reason::CancelReason;
use crate::stats;
use crate::sync::{self, AtomicU8, Condvar, Mutex, MutexGuard, Ordering, thread};

/// `flag`: not cancelled yet.
const ACTIVE: u8 = 0;
/// `flag`: cancelled; `shared.reason` holds the reason.
const CANCELLED: u8 = 1;

/// A callback registered with `on_cancel`.
pub(crate) type Callback = Box<dyn FnOnce(&CancelReason) + Send>;

/// Identifies a registered callback or waker within one token.
pub(crate) type Key = u64;

pub(crate) struct TokenState {
    /// [`ACTIVE`] or [`CANCELLED`]: the one word `is_cancelled` loads.
    flag: AtomicU8,
    shared: Mutex<Shared>,
    /// Signalled when the token is cancelled and whenever a callback finishes running, if
    /// anyone sleeps on it (invariant 6).
    changed: Condvar,
}

struct Shared {
    reason: Option<CancelReason>,
    next_key: Key,
    /// Callbacks in registration order, run in that order.
    callbacks: BTreeMap<Key, Callback>,
    /// Wakers of pending `WaitCancelled` futures.
    wakers: BTreeMap<Key, Waker>,
    /// The callback the cancelling thread is running right now, and that thread.
    running: Option<(Key, thread::ThreadId)>,
    /// For a child token: the registration on its parent, dropped (unlinked) with this state.
    parent_link: Option<crate::CallbackGuard>,
    /// Threads blocked on `changed` right now (invariant 6).
    sleepers: usize,
}

/// What [`TokenState::register_callback`] did with the callback.
pub(crate) enum Registered {
    /// Stored under this key; it runs when the token is cancelled.
    Pending(Key),
    /// The token was already cancelled; the callback has run.
    RanInline,
}

impl TokenState {
    pub(crate) fn new() -> Self {
        TokenState {
            flag: AtomicU8::new(ACTIVE),
            shared: Mutex::new(Shared {
                reason: None,
                next_key: 0,
                callbacks: BTreeMap::new(),
                wakers: BTreeMap::new(),
                running: None,
                parent_link: None,
                sleepers: 0,
            }),
            changed: Condvar::new(),
        }
    }

    /// One atomic load, no lock.
    #[inline]
    pub(crate) fn is_cancelled(&self) -> bool {
        // ORDERING: Acquire pairs with the Release store in `cancel`, so a caller that sees the
        // flag also sees everything the cancelling thread did before it cancelled (in
        // particular the reason, and any state it prepared for the native code).
        self.flag.load(Ordering::Acquire) == CANCELLED
    }

    pub(crate) fn reason(&self) -> Option<CancelReason> {
        if !self.is_cancelled() {
            return None;
        }
        sync::lock(&self.shared).reason.clone()
    }

    /// Cancels with `reason`; returns `true` only for the call that did it.
    pub(crate) fn cancel(&self, reason: CancelReason) -> bool {
        let (wakers, sleepers, has_callbacks) = {
            let mut shared = sync::lock(&self.shared);
            if shared.reason.is_some() {
                return false;
            }
            shared.reason = Some(reason.clone());
            // ORDERING: Release publishes the reason (and the canceller's earlier writes) to
            // `is_cancelled`'s Acquire load. The store happens under the lock (invariant 1).
            self.flag.store(CANCELLED, Ordering::Release);
            let wakers = std::mem::take(&mut shared.wakers);
            // Invariant 2: no callback can be added from here on, so an empty list stays empty.
            (wakers, shared.sleepers, !shared.callbacks.is_empty())
        };
        if sleepers > 0 {
            self.changed.notify_all();
        }
        for waker in wakers.into_values() {
            waker.wake();
        }
        if has_callbacks {
            self.run_callbacks(&reason);
        }
        true
    }

    /// Runs the registered callbacks one by one, in registration order, with the lock released
    /// while each runs (invariant 5). A panicking callback is caught and counted; the rest run.
    ///
    /// One critical section per callback both retires the one that just returned and takes out
    /// the next: a guard waiting for the former then sees another key running (or none) and
    /// returns.
    fn run_callbacks(&self, reason: &CancelReason) {
        let me = thread::current().id();
        loop {
            let (next, sleepers) = {
                let mut shared = sync::lock(&self.shared);
                let next = shared.callbacks.pop_first();
                shared.running = next.as_ref().map(|(key, _)| (*key, me));
                (next, shared.sleepers)
            };
            // Wakes guards waiting for the callback that just returned (invariant 6).
            if sleepers > 0 {
                self.changed.notify_all();
            }
            let Some((_, callback)) = next else {
                return;
            };
            if catch_unwind(AssertUnwindSafe(|| callback(reason))).is_err() {
                stats::callback_panicked();
            }
        }
    }

    /// Blocks on `changed` (for at most `timeout`, if given), counted in `sleepers` (invariant
    /// 6). The caller has just found, under this lock, that what it waits for is still false.
    fn sleep<'a>(
        &'a self,
        mut shared: MutexGuard<'a, Shared>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, Shared> {
        shared.sleepers += 1;
        let mut shared = match timeout {
            Some(timeout) => sync::wait_timeout(&self.changed, shared, timeout),
            None => sync::wait(&self.changed, shared),
        };
        shared.sleepers -= 1;
        shared
    }

    /// Registers `callback`, or runs it right away (before returning) if already cancelled.
    pub(crate) fn register_callback(&self, callback: Callback) -> Registered {
        let mut shared = sync::lock(&self.shared);
        match shared.reason.clone() {
            None => {
                let key = shared.next_key;
                shared.next_key += 1;
                shared.callbacks.insert(key, callback);
                Registered::Pending(key)
            }
            Some(reason) => {
                drop(shared);
                if catch_unwind(AssertUnwindSafe(|| callback(&reason))).is_err() {
                    stats::callback_panicked();
                }
                Registered::RanInline
            }
        }
    }

    /// Deregisters the callback under `key`. If it is running on another thread, waits until it
    /// has returned; if it is running on this thread (a guard dropped inside its own callback),
    /// returns at once.
    pub(crate) fn deregister_callback(&self, key: Key) {
        let mut shared = sync::lock(&self.shared);
        if let Some(callback) = shared.callbacks.remove(&key) {
            // Dropping the closure is user code (invariant 5).
            drop(shared);
            drop(callback);
            return;
        }
        let me = thread::current().id();
        while let Some((running, on)) = shared.running {
            if running != key || on == me {
                return;
            }
            shared = self.sleep(shared, None);
        }
    }

    /// Stores `waker` to be woken on cancel (replacing the one under `key`, if any), or returns
    /// the reason if the token is already cancelled.
    pub(crate) fn register_waker(
        &self,
        key: &mut Option<Key>,
        waker: &Waker,
    ) -> Result<(), CancelReason> {
        let mut shared = sync::lock(&self.shared);
        if let Some(reason) = &shared.reason {
            return Err(reason.clone());
        }
        let key = *key.get_or_insert_with(|| {
            let next = shared.next_key;
            shared.next_key += 1;
            next
        });
        let replaced = match shared.wakers.get(&key) {
            Some(stored) if stored.will_wake(waker) => None,
            _ => shared.wakers.insert(key, waker.clone()),
        };
        drop(shared);
        // A waker's drop is foreign code: never under our lock (invariant 5).
        drop(replaced);
        Ok(())
    }

    /// Forgets the waker under `key` (its future was dropped).
    pub(crate) fn deregister_waker(&self, key: Key) {
        let waker = sync::lock(&self.shared).wakers.remove(&key);
        drop(waker);
    }

    /// Blocks until cancelled or until `timeout` has passed.
    pub(crate) fn wait_timeout(&self, timeout: Duration) -> Option<CancelReason> {
        let deadline = Instant::now().checked_add(timeout);
        let mut shared = sync::lock(&self.shared);
        loop {
            if let Some(reason) = &shared.reason {
                return Some(reason.clone());
            }
            let left = match deadline {
                Some(deadline) => deadline.saturating_duration_since(Instant::now()),
                // A timeout too large for an `Instant` is as good as forever.
                None => Duration::from_secs(60 * 60 * 24),
            };
            if left.is_zero() {
                return None;
            }
            shared = self.sleep(shared, Some(left));
        }
    }

    /// Blocks until cancelled.
    pub(crate) fn wait(&self) -> CancelReason {
        let mut shared = sync::lock(&self.shared);
        loop {
            if let Some(reason) = &shared.reason {
                return reason.clone();
            }
            shared = self.sleep(shared, None);
        }
    }

    /// Stores the registration that links this (child) state to its parent.
    pub(crate) fn set_parent_link(&self, link: crate::CallbackGuard) {
        let old = sync::lock(&self.shared).parent_link.replace(link);
        drop(old);
    }

    /// Whether the callback under `key` is registered and has not started.
    pub(crate) fn is_callback_pending(&self, key: Key) -> bool {
        sync::lock(&self.shared).callbacks.contains_key(&key)
    }

    /// Callbacks not yet run plus pending `WaitCancelled` wakers.
    pub(crate) fn registrations(&self) -> usize {
        let shared = sync::lock(&self.shared);
        shared.callbacks.len() + shared.wakers.len()
    }
}

impl std::fmt::Debug for TokenState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let shared = sync::lock(&self.shared);
        f.debug_struct("TokenState")
            .field("reason", &shared.reason)
            .field("callbacks", &shared.callbacks.len())
            .field("waiters", &shared.wakers.len())
            .finish()
    }
}
