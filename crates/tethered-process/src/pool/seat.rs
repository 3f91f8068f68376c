//! A seat: one thread of the pool that owns a worker process at a time, runs the turns lent
//! to it, and replaces its worker when it must.
//!
//! # Lifecycle of a seat's thread
//!
//! ```text
//!          started              served, fit               closed
//!  Starting ──────▶ Idle ◀──────────────────── Busy ─────────────▶ (worker stopped, exit)
//!     ▲  │ failed:   │ ──(task)──────────────────▶ │
//!     │  │ backoff   │ died while idle              │ unfit (cancelled mid-turn,
//!     └──┴───────────┴──────────────────────────────┘  retired, died): stopped, replaced
//!  Starting ──(too many failures in a row: the pool breaks)──▶ (exit)
//! ```

use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tethered::CancelReason;

use super::Shared;
use super::state::{Lifecycle, Pending};
use super::worker::{Unfit, Worker};

/// A request's turn: run on a seat's thread with the seat's worker, it returns the publication
/// of its result, which the seat calls once its counts are updated (so a resolved request is
/// counted). Dropped unrun, it finishes its request as stopped.
pub(super) type Publish = Box<dyn FnOnce() + Send>;

pub(super) struct Task {
    pub(super) run: Box<dyn FnOnce(&mut Worker) -> Publish + Send>,
    /// Cancels the request (when the pool breaks while it waits).
    pub(super) abort: tethered::AbortHandle,
}

/// How often an idle seat looks whether its worker died.
const IDLE_CHECK: Duration = Duration::from_millis(100);
/// The first wait after a worker failed to start; it doubles with each failure in a row.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
/// The longest wait between two starts.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// What a dispatcher hands a seat.
enum Slot {
    Empty,
    Task(Task),
    Close,
}

/// The mailbox of one seat's thread.
pub(super) struct Seat {
    slot: Mutex<Slot>,
    ready: Condvar,
}

impl Seat {
    fn lock(&self) -> MutexGuard<'_, Slot> {
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Hands `task` to the seat's thread, which a dispatcher took off the idle list (so its
    /// slot is empty: a seat is listed only with an empty slot).
    pub(super) fn give(&self, task: Task) {
        let replaced = std::mem::replace(&mut *self.lock(), Slot::Task(task));
        debug_assert!(
            matches!(replaced, Slot::Empty),
            "a listed seat has an empty slot"
        );
        self.ready.notify_one();
    }

    /// Tells the seat's thread to stop its worker and end.
    pub(super) fn close(&self) {
        let mut slot = self.lock();
        if matches!(*slot, Slot::Empty) {
            *slot = Slot::Close;
        }
        self.ready.notify_one();
    }
}

/// Starts a seat's thread, with `first` as its first worker if given.
pub(super) fn start(
    shared: &Arc<Shared>,
    number: usize,
    first: Option<Worker>,
) -> std::io::Result<()> {
    let seat = Arc::new(Seat {
        slot: Mutex::new(Slot::Empty),
        ready: Condvar::new(),
    });
    let thread_shared = shared.clone();
    shared.guarded.lock().seats += 1;
    let spawned = std::thread::Builder::new()
        .name(format!("tethered-pool-{number}"))
        .spawn(move || run(&thread_shared, &seat, first));
    if spawned.is_err() {
        shared.guarded.lock().seats -= 1;
    }
    spawned.map(drop)
}

/// The seat's thread.
fn run(shared: &Shared, seat: &Arc<Seat>, mut first: Option<Worker>) {
    let mut replacing = false;
    loop {
        let worker = match first.take() {
            Some(worker) => Some(worker),
            None => start_worker(shared, replacing),
        };
        let Some(mut worker) = worker else {
            break;
        };
        replacing = true;
        serve(shared, seat, &mut worker);
        let closing = shared.guarded.lock().lifecycle != Lifecycle::Open;
        stop(shared, worker, closing);
        if closing {
            break;
        }
    }
    let mut state = shared.guarded.lock();
    state.seats -= 1;
    shared.guarded.changed.notify_all();
}

/// Starts a worker, after a backoff if the last ones failed (10 ms, doubling with each failure
/// in a row, up to 1 s); `None` once the pool is closed or broke.
fn start_worker(shared: &Shared, replacing: bool) -> Option<Worker> {
    loop {
        let (id, failures) = {
            let mut state = shared.guarded.lock();
            if state.lifecycle != Lifecycle::Open {
                return None;
            }
            state.next_worker += 1;
            (state.next_worker - 1, state.failures_in_a_row)
        };
        if failures > 0 {
            let backoff = FIRST_BACKOFF
                .saturating_mul(1 << (failures - 1).min(16))
                .min(MAX_BACKOFF);
            // Interrupted by the pool's close.
            if shared.stop.token().wait_timeout(backoff).is_some() {
                return None;
            }
        }
        match shared.spawn_worker(id) {
            Ok(worker) => {
                let mut state = shared.guarded.lock();
                state.counts.live += 1;
                if replacing {
                    state.counts.replaced += 1;
                }
                return Some(worker);
            }
            Err(err) => shared.start_failed(&format!("starting worker {id} failed: {err}")),
        }
    }
}

/// Serves turns with `worker` until it is unfit or the pool closes.
fn serve(shared: &Shared, seat: &Arc<Seat>, worker: &mut Worker) {
    loop {
        let Some(task) = next_task(shared, seat, worker) else {
            return;
        };
        shared.guarded.lock().counts.busy += 1;
        let publish = (task.run)(worker);
        worker.end_turn();
        let unfit = worker.unfit();
        {
            let mut state = shared.guarded.lock();
            state.counts.busy -= 1;
            if unfit.is_none() {
                state.counts.served += 1;
                state.failures_in_a_row = 0;
                worker.served += 1;
            }
        }
        publish();
        if unfit.is_some() {
            return;
        }
    }
}

/// The next task: a waiting request, or one handed to the seat while it is idle; `None` when
/// the worker is unfit (it died while idle) or the pool closed.
fn next_task(shared: &Shared, seat: &Arc<Seat>, worker: &mut Worker) -> Option<Task> {
    let taken = {
        let mut state = shared.guarded.lock();
        if state.lifecycle != Lifecycle::Open {
            return None;
        }
        match state.pending.pop_front() {
            Some(pending) => Some(pending),
            None => {
                // A task handed over while this seat was away from the idle list (its worker
                // died while idle, and a dispatcher had already taken the seat) is run first;
                // only an empty seat goes back on the list, so no dispatcher overwrites a task.
                let mut slot = seat.lock();
                match std::mem::replace(&mut *slot, Slot::Empty) {
                    Slot::Task(task) => return Some(task),
                    Slot::Close => return None,
                    Slot::Empty => state.idle.push(seat.clone()),
                }
                None
            }
        }
    };
    if let Some(Pending { task, link, .. }) = taken {
        // Its cancel link is the turn's business now (the task links its own); dropped with no
        // lock held, as it may wait for a callback that is taking the pool's lock.
        drop(link);
        return Some(task);
    }
    let mut slot = seat.lock();
    loop {
        match std::mem::replace(&mut *slot, Slot::Empty) {
            Slot::Task(task) => return Some(task),
            Slot::Close => return None,
            Slot::Empty => {}
        }
        if worker.unfit().is_some() {
            drop(slot);
            // Died while idle: leave the idle list; a task handed over meanwhile goes back to
            // the front of the queue, for the replacement.
            let mut state = shared.guarded.lock();
            state.idle.retain(|idle| !Arc::ptr_eq(idle, seat));
            if let Slot::Task(task) = std::mem::replace(&mut *seat.lock(), Slot::Empty) {
                state.enqueue(task, true);
            }
            return None;
        }
        slot = seat
            .ready
            .wait_timeout(slot, IDLE_CHECK)
            .unwrap_or_else(PoisonError::into_inner)
            .0;
    }
}

/// Stops `worker` (a cancel with `Shutdown` for a closing pool, `Requested` otherwise), waits
/// for its reap, and counts why it went.
fn stop(shared: &Shared, worker: Worker, closing: bool) {
    let unfit = worker.unfit();
    let served = worker.served;
    let job = worker.job;
    job.cancel(if closing {
        CancelReason::Shutdown
    } else {
        CancelReason::Requested
    });
    // Within the worker's grace, then SIGKILL: the supervisor reaps it.
    let _ = job.join_blocking();
    let failed_at_start = {
        let mut state = shared.guarded.lock();
        state.counts.live -= 1;
        match &unfit {
            Some(Unfit::Cancelled) => state.counts.cancelled_mid_turn += 1,
            Some(Unfit::Died) => state.counts.died += 1,
            Some(Unfit::Broken(_)) => state.counts.retired += 1,
            None => {}
        }
        shared.guarded.changed.notify_all();
        // A worker that died or broke before it served one turn counts as a failed start.
        served == 0 && matches!(unfit, Some(Unfit::Died | Unfit::Broken(_)))
    };
    if failed_at_start && !closing {
        let why = unfit.map(|unfit| unfit.to_string()).unwrap_or_default();
        shared.start_failed(&format!("a worker ended before serving a request: {why}"));
    }
}
