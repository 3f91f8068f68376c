//! The pool's shared state: idle seats, waiting requests, counts, and whether it is closed or
//! broken.
//!
//! # Lifecycle
//!
//! ```text
//!  Open ──(close: `shutdown_blocking`, drop)──▶ Closed
//!    └──(too many workers in a row failed to start)──▶ Broken ──(close)──▶ Closed
//! ```
//!
//! # Invariants
//!
//! 1. A waiting request is in `pending` until a seat takes it, its cancel callback removes it,
//!    or the pool closes or breaks; whoever takes it out drops it (or runs it) with no lock
//!    held, since its drop finishes its job (user code: wakers).
//! 2. A seat is in `idle` only while its thread waits for a task with a live worker; the pool
//!    lock is taken before a seat's lock, never after.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use tethered::CallbackGuard;

use super::seat::{Seat, Task};

/// Where the pool is in its life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Lifecycle {
    Open,
    /// No worker could be kept up: the reason, given to every request.
    Broken(Arc<str>),
    Closed,
}

/// A request waiting for a worker.
pub(super) struct Pending {
    pub(super) id: u64,
    pub(super) task: Task,
    /// Removes it from `pending` when its request is cancelled; `None` until registered.
    pub(super) link: Option<CallbackGuard>,
}

/// The counts behind [`PoolStats`](super::PoolStats).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counts {
    pub(super) live: usize,
    pub(super) busy: usize,
    pub(super) served: u64,
    pub(super) replaced: u64,
    pub(super) cancelled_mid_turn: u64,
    pub(super) died: u64,
    pub(super) retired: u64,
    pub(super) start_failures: u64,
}

pub(super) struct State {
    pub(super) lifecycle: Lifecycle,
    pub(super) idle: Vec<Arc<Seat>>,
    pub(super) pending: VecDeque<Pending>,
    pub(super) next_pending: u64,
    pub(super) next_worker: u64,
    pub(super) counts: Counts,
    /// Workers in a row that failed to start, or ended before serving a turn.
    pub(super) failures_in_a_row: u32,
    /// Seat threads still running.
    pub(super) seats: usize,
}

impl State {
    /// Queues `task` (at the front, for one handed back by a seat whose worker died) with a
    /// fresh id, and no cancel link yet; the id.
    pub(super) fn enqueue(&mut self, task: Task, at_front: bool) -> u64 {
        let id = self.next_pending;
        self.next_pending += 1;
        let pending = Pending {
            id,
            task,
            link: None,
        };
        if at_front {
            self.pending.push_front(pending);
        } else {
            self.pending.push_back(pending);
        }
        id
    }
}

/// The lock and the condition variable `shutdown_blocking` waits on.
pub(super) struct Guarded {
    state: Mutex<State>,
    pub(super) changed: Condvar,
}

impl Guarded {
    pub(super) fn new() -> Guarded {
        Guarded {
            state: Mutex::new(State {
                lifecycle: Lifecycle::Open,
                idle: Vec::new(),
                pending: VecDeque::new(),
                next_pending: 0,
                next_worker: 2,
                counts: Counts::default(),
                failures_in_a_row: 0,
                seats: 0,
            }),
            changed: Condvar::new(),
        }
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        // No code of the pool panics under the lock; user code never runs under it.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Removes the waiting request `id`, for its drop outside the lock.
    pub(super) fn take_pending(&self, id: u64) -> Option<Pending> {
        let mut state = self.lock();
        let at = state.pending.iter().position(|pending| pending.id == id)?;
        state.pending.remove(at)
    }
}
