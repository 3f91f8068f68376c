//! What the loom models in `loom-tests/` drive: the supervisor's shared state, with the
//! children and the wake channel replaced by plain values. Built only under
//! `--cfg tethered_loom`; not part of the API.

use std::collections::HashMap;
use std::sync::Arc;

use loom::sync::atomic::{AtomicBool, Ordering};
use tethered::Completer;

use crate::launch::Launch;
use crate::output::ProcessOutput;
use crate::supervisor::{Entry, Inbox};

/// A child as the inbox sees it: its id, its job's cancel flag, whether it exited by itself
/// (the kernel's side, set by a model's thread), and what the supervisor did with it.
#[derive(Debug)]
pub struct ModelChild {
    /// Its id.
    pub id: u64,
    /// Its job's token, reduced to the flag.
    pub cancelled: Arc<AtomicBool>,
    /// The process exited by itself (not yet reaped).
    pub exited: Arc<AtomicBool>,
    /// Whether the supervisor began its stop (sent the polite signal).
    pub stopped: bool,
    /// Whether the supervisor reaped it.
    pub reaped: bool,
}

impl Entry for ModelChild {
    fn id(&self) -> u64 {
        self.id
    }

    fn is_cancelled(&self) -> bool {
        // ORDERING: SeqCst, as a token's flag is read by the supervisor: the models check the
        // inbox's logic, not this stand-in's ordering.
        self.cancelled.load(Ordering::SeqCst)
    }

    fn stoppable(&self) -> bool {
        !self.stopped && !self.reaped
    }

    fn cancel_seen(&mut self) {}

    fn reap_if_exited(&mut self) -> bool {
        // ORDERING: SeqCst, as above: the stand-in for `waitid`.
        if self.exited.load(Ordering::SeqCst) {
            self.reaped = true;
        }
        self.reaped
    }

    fn signal_stop(&mut self) {
        self.stopped = true;
    }
}

/// The supervisor's inbox.
#[allow(missing_debug_implementations)]
pub struct ModelInbox(Inbox<ModelChild>);

impl ModelInbox {
    /// An empty inbox.
    pub fn new() -> Self {
        ModelInbox(Inbox::new())
    }

    /// A spawning thread posts a child; `true` if it must write the wake byte.
    pub fn post(&self, child: ModelChild) -> bool {
        self.0.post(child)
    }

    /// A cancel callback posts a cancel; `true` if it must write the wake byte.
    pub fn cancel(&self, id: u64) -> bool {
        self.0.cancel(id)
    }

    /// One turn of the supervisor after `poll` returned: `drain` empties the wake channel,
    /// then the mail is delivered into `children`, then every child whose exit `poll`
    /// reported (here: every child that exited) is reaped, as the supervisor's turn does (the
    /// model keeps reaped children in the table, to be looked at).
    pub fn turn(&self, drain: impl FnOnce(), children: &mut HashMap<u64, ModelChild>) {
        self.0.collect(drain).deliver(children);
        for child in children.values_mut() {
            if !child.reaped {
                child.reap_if_exited();
            }
        }
    }
}

impl Default for ModelInbox {
    fn default() -> Self {
        Self::new()
    }
}

/// What a `ProcessJob` knows of its child.
#[allow(missing_debug_implementations)]
pub struct ModelLaunch(Arc<Launch>);

impl ModelLaunch {
    /// A launch still waiting for its child.
    pub fn new() -> Self {
        ModelLaunch(Launch::new())
    }

    /// The start failed with `err`; `completer` is the job's.
    pub fn failed(&self, err: tethered::SpawnError, completer: Completer<ProcessOutput>) {
        self.0.failed(err, Some(completer));
    }

    /// The spawn hands the job out: the start's error if it failed before.
    pub fn hand_out(&self) -> Result<(), tethered::SpawnError> {
        self.0.hand_out()
    }
}

impl Default for ModelLaunch {
    fn default() -> Self {
        Self::new()
    }
}

/// The pool's queue and idle list (`pool/queue.rs`), over any task: a model's tasks record
/// their own drop, which is how a waiting request finishes when its cancel takes it out.
#[allow(missing_debug_implementations)]
pub struct ModelQueue<T: Send + 'static>(Arc<crate::pool::queue::Queue<T>>);

impl<T: Send + 'static> Clone for ModelQueue<T> {
    fn clone(&self) -> Self {
        ModelQueue(self.0.clone())
    }
}

/// What a seat got when it asked the queue for work.
#[derive(Debug, PartialEq, Eq)]
pub enum ModelNext<T> {
    /// A task to run.
    Task(T),
    /// Nothing: the seat is on the idle list and waits on its mailbox.
    Idle,
    /// The pool closed.
    Closed,
}

impl<T: Send + 'static> ModelQueue<T> {
    /// An open pool with no seat.
    pub fn new() -> Self {
        ModelQueue(crate::pool::queue::Queue::new())
    }

    /// A request (or one a seat handed back, `at_front`) for a worker, cancelled with `token`:
    /// handed to an idle seat, or queued with its cancel link. `Err(task)` if the pool is closed.
    pub fn dispatch(
        &self,
        task: T,
        token: &tethered::CancelToken,
        at_front: bool,
    ) -> Result<(), T> {
        self.0.dispatch(task, token, at_front)
    }

    /// A seat asks for its next task.
    pub fn next(&self, seat: &ModelSeat<T>) -> ModelNext<T> {
        match self.0.next(&seat.0) {
            crate::pool::queue::Next::Task(task) => ModelNext::Task(task),
            crate::pool::queue::Next::Idle => ModelNext::Idle,
            crate::pool::queue::Next::Closed => ModelNext::Closed,
        }
    }

    /// A seat whose worker left while it waited leaves the idle list; a task handed to it
    /// meanwhile comes back.
    pub fn leave_idle(&self, seat: &ModelSeat<T>) -> Option<T> {
        self.0.leave_idle(&seat.0)
    }

    /// Requests waiting for a worker.
    pub fn waiting(&self) -> usize {
        self.0.lock().waiting()
    }

    /// Closes the pool; the waiting requests come back, to be dropped.
    pub fn close(&self) -> Vec<T> {
        self.0
            .end(crate::pool::queue::Lifecycle::Closed)
            .into_iter()
            .map(|(task, _link)| task)
            .collect()
    }
}

impl<T: Send + 'static> Default for ModelQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// One seat's mailbox (`pool/mailbox.rs`); clones are the same seat.
#[allow(missing_debug_implementations)]
pub struct ModelSeat<T>(Arc<crate::pool::mailbox::Seat<T>>);

impl<T> Clone for ModelSeat<T> {
    fn clone(&self) -> Self {
        ModelSeat(self.0.clone())
    }
}

impl<T> ModelSeat<T> {
    /// A seat with an empty slot.
    pub fn new() -> Self {
        ModelSeat(Arc::new(crate::pool::mailbox::Seat::new()))
    }

    /// What the seat's thread finds in its slot, waiting for it (under loom, a wait that no
    /// hand-over would end is a deadlock): `Some(task)`, or `None` for a close.
    pub fn wait(&self) -> Option<T> {
        loop {
            match self.0.wait(
                std::time::Duration::ZERO,
                std::time::Duration::from_secs(3600),
            ) {
                crate::pool::mailbox::Slot::Task(task) => return Some(task),
                crate::pool::mailbox::Slot::Close => return None,
                crate::pool::mailbox::Slot::Empty => {}
            }
        }
    }

    /// What the slot holds now, without waiting.
    pub fn take(&self) -> Option<T> {
        match self.0.take() {
            crate::pool::mailbox::Slot::Task(task) => Some(task),
            _ => None,
        }
    }
}

impl<T> Default for ModelSeat<T> {
    fn default() -> Self {
        Self::new()
    }
}
