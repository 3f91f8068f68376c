//! A process-wide timer thread for the few deadlines the core keeps itself: a job's abandon
//! grace ([`JobOptions::grace`](crate::JobOptions::grace)), a scope's shutdown
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
//! 2. The thread is started at most once per process and only by a `schedule` that found it
//!    not started; if the OS refuses the thread, `schedule` returns the error, nothing is
//!    queued, and the next `schedule` tries again (no poisoned `Once`).
//! 3. Fork: after `fork()` only the forking thread exists in the child, so the parent's timer
//!    is a ghost there (its thread is gone, and its lock may have been held by a thread that
//!    no longer exists). Each process therefore has a timer of its own ([`PerProcess`]); a
//!    process never touches another's timer, not even its lock: an entry scheduled before a
//!    fork and dropped after it in the child is forgotten, not removed. So a forked child
//!    (gunicorn's preload, `multiprocessing`'s fork, a daemon) starts a timer of its own on
//!    first use.
//!
//! Under `--cfg tethered_loom` this module uses `std` primitives (a process-wide thread cannot
//! be part of a loom model); no model schedules a deadline.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Condvar, Mutex, MutexGuard};

use crate::per_process::PerProcess;
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

/// This process's timer (invariant 3), and its pid.
fn timer() -> (&'static Timer, u32) {
    static TIMER: PerProcess<Timer> = PerProcess::new(|| Timer {
        queue: Mutex::new(Queue::default()),
        changed: Condvar::new(),
    });
    TIMER.get_with_pid()
}

fn lock(timer: &Timer) -> MutexGuard<'_, Queue> {
    timer.queue.lock().unwrap_or_else(|e| e.into_inner())
}

/// A scheduled deadline; dropping it removes the deadline unrun (a no-op once it ran).
pub(crate) struct TimerEntry {
    key: Key,
    /// The timer it is in, and the pid of its process: a forked child's drop of a parent's
    /// entry leaves the parent's (ghost) timer alone (invariant 3).
    timer: &'static Timer,
    pid: u32,
}

impl Drop for TimerEntry {
    fn drop(&mut self) {
        if self.pid != std::process::id() {
            return;
        }
        let action = lock(self.timer).entries.remove(&self.key);
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
    let (timer, pid) = timer();
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
    Ok(TimerEntry { key, timer, pid })
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

/// A future that resolves at a deadline on this timer (never, for `None`): what
/// [`Timeout`](crate::Timeout) and a scope's shutdown wait on. It wakes the latest waker it was
/// polled with (a future may move between tasks), and takes its entry out of the timer when
/// it resolves or is dropped.
pub(crate) struct Sleep {
    deadline: Option<Instant>,
    /// The waker the timer wakes, shared with the timer's action.
    waker: Option<std::sync::Arc<Mutex<std::task::Waker>>>,
    entry: Option<TimerEntry>,
}

impl Sleep {
    pub(crate) fn until(deadline: Option<Instant>) -> Sleep {
        Sleep {
            deadline,
            waker: None,
            entry: None,
        }
    }

    /// Whether the deadline has passed; otherwise makes sure the timer wakes `waker` at it.
    ///
    /// # Errors
    ///
    /// If the timer thread could not be started: the caller must not wait for a wake-up
    /// that never comes.
    pub(crate) fn poll_at(&mut self, waker: &std::task::Waker) -> std::io::Result<bool> {
        let Some(deadline) = self.deadline else {
            return Ok(false);
        };
        if Instant::now() >= deadline {
            self.entry = None;
            return Ok(true);
        }
        match &self.waker {
            Some(slot) => {
                let replaced = {
                    let mut stored = slot.lock().unwrap_or_else(|e| e.into_inner());
                    if stored.will_wake(waker) {
                        None
                    } else {
                        Some(std::mem::replace(&mut *stored, waker.clone()))
                    }
                };
                drop_contained(replaced);
            }
            None => {
                let slot = std::sync::Arc::new(Mutex::new(waker.clone()));
                let entry = schedule(
                    deadline,
                    Box::new({
                        let slot = slot.clone();
                        move || {
                            let waker = slot.lock().unwrap_or_else(|e| e.into_inner()).clone();
                            waker.wake();
                        }
                    }),
                )?;
                self.waker = Some(slot);
                self.entry = Some(entry);
            }
        }
        Ok(false)
    }
}

impl fmt::Debug for Sleep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Sleep")
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}
