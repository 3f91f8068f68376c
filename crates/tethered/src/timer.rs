//! A process-wide timer thread for the few deadlines the core keeps itself: a job's abandon
//! grace ([`Builder::abandon_after`](crate::Builder::abandon_after)), a scope's shutdown
//! grace, and the `cancel_after` deadlines of sources and jobs (`CancelToken::on_deadline`).
//!
//! The core depends on no runtime, so it has no runtime timer. Deadlines are few (one per
//! cancelled job that asked for an abandon policy, per scope shutdown, per `cancel_after`), so one lazily
//! started thread serves them all: an ordered map of deadlines under a mutex, and a condition
//! variable it sleeps on until the earliest one. It runs the due actions (which wake a task or
//! flip a flag, nothing slow) outside the lock, each contained.
//!
//! # Invariants
//!
//! 1. An entry is in `queue.entries` from `schedule` until it is due (the thread takes it out
//!    and runs it) or its [`TimerEntry`] is dropped (removed unrun): a finished job or a
//!    completed shutdown keeps nothing here.
//! 2. The thread is started at most once and only by a `schedule` that found it not started;
//!    if the OS refuses the thread, `schedule` returns the error, nothing is queued, and the
//!    next `schedule` tries again (no poisoned `Once`).
//!
//! Under `--cfg tethered_loom` this module uses `std` primitives (a process-wide thread cannot
//! be part of a loom model); no model schedules a deadline.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use crate::contain::{drop_contained, run_contained};

type Action = Box<dyn FnOnce() + Send>;

/// Orders entries by deadline, then by insertion.
type Key = (Instant, u64);

#[derive(Default)]
struct Queue {
    next_seq: u64,
    entries: BTreeMap<Key, Action>,
    started: bool,
}

struct Timer {
    queue: Mutex<Queue>,
    changed: Condvar,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<Timer> = OnceLock::new();
    TIMER.get_or_init(|| Timer {
        queue: Mutex::new(Queue::default()),
        changed: Condvar::new(),
    })
}

fn lock(timer: &Timer) -> MutexGuard<'_, Queue> {
    timer.queue.lock().unwrap_or_else(|e| e.into_inner())
}

/// A scheduled deadline; dropping it removes the deadline unrun (a no-op once it ran).
pub(crate) struct TimerEntry {
    key: Key,
}

impl Drop for TimerEntry {
    fn drop(&mut self) {
        let action = lock(timer()).entries.remove(&self.key);
        // The action's captures are user-adjacent (wakers): dropped outside the lock.
        drop_contained(action);
    }
}

impl fmt::Debug for TimerEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimerEntry")
            .field("deadline", &self.key.0)
            .finish()
    }
}

/// Runs `action` on the timer thread at `deadline`, unless the returned entry is dropped
/// first. Fails only if the timer thread is not running and the OS refuses to start it.
pub(crate) fn schedule(deadline: Instant, action: Action) -> std::io::Result<TimerEntry> {
    let timer = timer();
    let mut queue = lock(timer);
    if !queue.started {
        std::thread::Builder::new()
            .name("tethered-timer".into())
            .spawn(move || run(timer))?;
        queue.started = true;
    }
    let key = (deadline, queue.next_seq);
    queue.next_seq += 1;
    queue.entries.insert(key, action);
    drop(queue);
    timer.changed.notify_one();
    Ok(TimerEntry { key })
}

fn run(timer: &Timer) {
    let mut queue = lock(timer);
    loop {
        let now = Instant::now();
        let mut due = Vec::new();
        while let Some(entry) = queue.entries.first_entry() {
            if entry.key().0 > now {
                break;
            }
            due.push(entry.remove());
        }
        if !due.is_empty() {
            drop(queue);
            for action in due {
                // An action only wakes or flips flags; a panic there must not kill the timer.
                run_contained(action);
            }
            queue = lock(timer);
            continue;
        }
        queue = match queue.entries.first_key_value().map(|(key, _)| key.0) {
            Some(deadline) => {
                let wait = deadline.saturating_duration_since(now);
                timer
                    .changed
                    .wait_timeout(queue, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
            None => timer.changed.wait(queue).unwrap_or_else(|e| e.into_inner()),
        };
    }
}
