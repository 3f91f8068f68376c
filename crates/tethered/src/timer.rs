//! A process-wide timer thread for the few deadlines the core keeps itself: a job's abandon
//! grace ([`NativeJob::abandon_after`](crate::NativeJob)) and a scope's shutdown grace.
//!
//! The core depends on no runtime, so it has no runtime timer. Deadlines are rare (one per
//! cancelled job that asked for an abandon policy, one per scope shutdown), so one lazily
//! started thread serves them all: a heap of deadlines under a mutex, and a condition variable
//! it sleeps on until the earliest one. It runs the due actions (which wake a task or flip a
//! flag, nothing slow) outside the lock, each under `catch_unwind`.
//!
//! Under `--cfg tethered_loom` this module uses `std` primitives (a process-wide thread cannot
//! be part of a loom model); no model schedules a deadline.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::Instant;

type Action = Box<dyn FnOnce() + Send>;

struct Entry {
    deadline: Instant,
    seq: u64,
    action: Action,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        (self.deadline, self.seq) == (other.deadline, other.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.deadline, self.seq).cmp(&(other.deadline, other.seq))
    }
}

struct Timer {
    queue: Mutex<(u64, BinaryHeap<Reverse<Entry>>)>,
    changed: Condvar,
}

fn timer() -> &'static Timer {
    static TIMER: OnceLock<Timer> = OnceLock::new();
    static STARTED: std::sync::Once = std::sync::Once::new();
    let timer = TIMER.get_or_init(|| Timer {
        queue: Mutex::new((0, BinaryHeap::new())),
        changed: Condvar::new(),
    });
    STARTED.call_once(|| {
        std::thread::Builder::new()
            .name("tethered-timer".into())
            .spawn(move || run(timer))
            .expect("failed to spawn the tethered timer thread");
    });
    timer
}

/// Runs `action` on the timer thread at `deadline` (or soon after).
pub(crate) fn schedule(deadline: Instant, action: Action) {
    let timer = timer();
    let mut queue = timer.queue.lock().unwrap_or_else(|e| e.into_inner());
    let seq = queue.0;
    queue.0 += 1;
    queue.1.push(Reverse(Entry {
        deadline,
        seq,
        action,
    }));
    drop(queue);
    timer.changed.notify_one();
}

fn run(timer: &Timer) {
    let mut queue = timer.queue.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let now = Instant::now();
        let mut due = Vec::new();
        while queue.1.peek().is_some_and(|next| next.0.deadline <= now) {
            if let Some(Reverse(entry)) = queue.1.pop() {
                due.push(entry.action);
            }
        }
        if !due.is_empty() {
            drop(queue);
            for action in due {
                // An action only wakes or flips flags; a panic there must not kill the timer.
                let _ = catch_unwind(AssertUnwindSafe(action));
            }
            queue = timer.queue.lock().unwrap_or_else(|e| e.into_inner());
            continue;
        }
        queue = match queue.1.peek().map(|next| next.0.deadline) {
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
