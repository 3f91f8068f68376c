//! The pool's shared state: whether it is open, its idle seats, the requests waiting for a
//! worker (each with the link that takes it out when its request is cancelled), and its counts.
//! Generic over the task, so the loom models in `loom-tests/` drive this very code.
//!
//! # Lifecycle
//!
//! ```text
//!  Open ──(close: `shutdown`, drop)──▶ Closed
//!    └──(too many workers in a row failed)──▶ Broken ──(close)──▶ Closed
//! ```
//!
//! # Invariants
//!
//! 1. A waiting request is in `pending` until a seat takes it, its cancel link removes it, or
//!    the pool closes or breaks; whoever takes it out drops it (or runs it) with no lock held,
//!    since its drop finishes its job (user code: wakers). A request handed back by a seat (its
//!    worker was found gone) is queued again at the front with a link of its own, so a cancel
//!    still reaches it.
//! 2. A seat is in `idle` only while its thread waits for a task (with a live worker, or none:
//!    a seat whose worker left while idle starts one when a task comes), and only with an empty
//!    slot (see `mailbox.rs`).
//! 3. A link is registered, and dropped, with no lock of the pool held: its callback takes the
//!    pool's lock, and a guard's drop waits for a running callback.
//! 4. Lock order: the pool's lock before a seat's.

use std::collections::VecDeque;
use std::sync::Arc;

use tethered::{CallbackGuard, CancelToken};

use super::mailbox::{Seat, Slot};
use crate::sync::{self, Condvar, Mutex, MutexGuard};

/// Where the pool is in its life.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Lifecycle {
    Open,
    /// No worker could be kept up: the reason, given to every request.
    Broken(Arc<str>),
    Closed,
}

/// A request waiting for a worker.
struct Pending<T> {
    id: u64,
    task: T,
    /// Removes it from `pending` when its request is cancelled; `None` until registered.
    link: Option<CallbackGuard>,
}

/// The counts behind the pool's stats.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counts {
    pub(crate) live: usize,
    pub(crate) busy: usize,
    pub(crate) served: u64,
    pub(crate) replaced: u64,
    pub(crate) cancelled_mid_turn: u64,
    pub(crate) died: u64,
    pub(crate) idle_exits: u64,
    pub(crate) retired: u64,
    pub(crate) start_failures: u64,
}

/// What the pool's lock guards.
pub(crate) struct State<T> {
    pub(crate) lifecycle: Lifecycle,
    idle: Vec<Arc<Seat<T>>>,
    pending: VecDeque<Pending<T>>,
    next_pending: u64,
    pub(crate) next_worker: u64,
    pub(crate) counts: Counts,
    /// Workers in a row that failed to start or died before serving a request.
    pub(crate) failures_in_a_row: u32,
    /// Seat threads still running.
    pub(crate) seats: usize,
}

impl<T> State<T> {
    /// Idle seats (waiting for a task) now.
    pub(crate) fn idle_seats(&self) -> usize {
        self.idle.len()
    }

    /// Requests waiting for a worker now.
    pub(crate) fn waiting(&self) -> usize {
        self.pending.len()
    }
}

/// What a seat gets when it asks for work.
pub(crate) enum Next<T> {
    /// A task to run.
    Task(T),
    /// Nothing yet: the seat is on the idle list; wait on its mailbox.
    Idle,
    /// The pool closed or broke: end.
    Closed,
}

/// The pool's lock, and the condition variable a shutdown waits on.
pub(crate) struct Queue<T> {
    state: Mutex<State<T>>,
    pub(crate) changed: Condvar,
}

impl<T: Send + 'static> Queue<T> {
    pub(crate) fn new() -> Arc<Queue<T>> {
        Arc::new(Queue {
            state: Mutex::new(State {
                lifecycle: Lifecycle::Open,
                idle: Vec::new(),
                pending: VecDeque::new(),
                next_pending: 0,
                next_worker: 1,
                counts: Counts::default(),
                failures_in_a_row: 0,
                seats: 0,
            }),
            changed: Condvar::new(),
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State<T>> {
        // No code of the pool panics under the lock; user code never runs under it.
        sync::lock(&self.state)
    }

    /// Hands `task` to an idle seat, or queues it (at the front, for a task a seat hands back)
    /// with a link that takes it out when `token` is cancelled. `Err(task)` if the pool is not
    /// open: the caller drops it, which finishes its request as stopped.
    pub(crate) fn dispatch(
        self: &Arc<Self>,
        task: T,
        token: &CancelToken,
        at_front: bool,
    ) -> Result<(), T> {
        let id = {
            let mut state = self.lock();
            if state.lifecycle != Lifecycle::Open {
                return Err(task);
            }
            if let Some(seat) = state.idle.pop() {
                // Invariant 4: the pool's lock, then the seat's.
                seat.give(task);
                return Ok(());
            }
            let id = state.next_pending;
            state.next_pending += 1;
            let pending = Pending {
                id,
                task,
                link: None,
            };
            if at_front && !crate::fault::put_back("pool_requeue_at_back") {
                state.pending.push_front(pending);
            } else {
                state.pending.push_back(pending);
            }
            id
        };
        if crate::fault::put_back("pool_requeue_without_link") && at_front {
            return Ok(());
        }
        let queue = Arc::downgrade(self);
        // Invariant 3. Runs at once if the request is cancelled already.
        let link = token.on_cancel(move |_reason| {
            if let Some(queue) = queue.upgrade() {
                // Dropped here, with no lock held: the request finishes stopped.
                drop(queue.take_pending(id));
            }
        });
        let unneeded = {
            let mut state = self.lock();
            match state.pending.iter_mut().find(|pending| pending.id == id) {
                Some(pending) => {
                    pending.link = Some(link);
                    None
                }
                // Taken meanwhile (by a seat, or by its own link): the link is not needed.
                None => Some(link),
            }
        };
        drop(unneeded);
        Ok(())
    }

    /// Takes the waiting request `id` out, for its drop outside the lock.
    fn take_pending(&self, id: u64) -> Option<(T, Option<CallbackGuard>)> {
        let mut state = self.lock();
        let at = state.pending.iter().position(|pending| pending.id == id)?;
        state
            .pending
            .remove(at)
            .map(|pending| (pending.task, pending.link))
    }

    /// The next task for `seat`: the oldest waiting request, or one handed to the seat while it
    /// was away from the idle list; otherwise the seat goes on the idle list (`Next::Idle`).
    pub(crate) fn next(&self, seat: &Arc<Seat<T>>) -> Next<T> {
        let taken = {
            let mut state = self.lock();
            if state.lifecycle != Lifecycle::Open {
                return Next::Closed;
            }
            match state.pending.pop_front() {
                Some(pending) => pending,
                None => {
                    // Invariant 4: the pool's lock, then the seat's. Only an empty seat goes
                    // on the list (invariant 2).
                    match seat.take() {
                        Slot::Task(task) => return Next::Task(task),
                        Slot::Close => return Next::Closed,
                        Slot::Empty => state.idle.push(seat.clone()),
                    }
                    return Next::Idle;
                }
            }
        };
        // Its link is the turn's business now (the task watches its own token); dropped with
        // no lock held (invariant 3).
        drop(taken.link);
        Next::Task(taken.task)
    }

    /// Takes `seat` off the idle list (its worker left while it waited) and gives back a task
    /// handed to it meanwhile, if any.
    pub(crate) fn leave_idle(&self, seat: &Arc<Seat<T>>) -> Option<T> {
        let mut state = self.lock();
        state.idle.retain(|idle| !Arc::ptr_eq(idle, seat));
        match seat.take() {
            Slot::Task(task) => Some(task),
            Slot::Close => {
                // Put back: the seat must still see that it is to close.
                seat.close();
                None
            }
            Slot::Empty => None,
        }
    }

    /// Leaves the lifecycle `Open` for `to` (closing or breaking the pool): tells every idle
    /// seat to end and gives back every waiting request, to be dropped (or cancelled) with no
    /// lock held.
    pub(crate) fn end(&self, to: Lifecycle) -> Vec<(T, Option<CallbackGuard>)> {
        let taken = {
            let mut state = self.lock();
            if to == Lifecycle::Closed || state.lifecycle == Lifecycle::Open {
                state.lifecycle = to;
            }
            for idle in state.idle.drain(..) {
                idle.close();
            }
            state
                .pending
                .drain(..)
                .map(|pending| (pending.task, pending.link))
                .collect()
        };
        self.changed.notify_all();
        taken
    }
}
