//! Where a finished job's outcome is delivered to Python: on the job's own thread when that
//! thread has just run the job's closure, else on one thread of this crate's own.
//!
//! A job's handle wakes its link on whatever thread finished the job. Usually that is the job's
//! own thread, right after the closure returned: a thread that was running the caller's native
//! code, which may attach to the interpreter itself, so it can as well convert the outcome under
//! the GIL and hand it to the loop, as `asyncio.to_thread`'s worker does. That saves a hop to
//! another thread on every call (about a fifth of a short call's latency). [`closure_returned`]
//! marks the thread for that one call, and [`deliver`] finds the mark. A job that finished
//! before its future was tied to it is delivered by the caller's thread, which ties it under
//! the GIL.
//!
//! But a cancel finishes a job whose closure had not started on the thread that cancels: a
//! thread of the application's (a scope's `cancel_all`, a parent token's cancel), which may hold
//! locks of its own. Taking the GIL there would stall it behind the interpreter, or deadlock it
//! if the GIL's holder waits for one of those locks. So such a delivery (and any other not on
//! the marked thread) runs on the crate's delivery thread, which takes the GIL for nothing else.
//!
//! If the OS refuses the thread, deliveries run where the job finished, as a last resort.
//! The thread is per process ([`PerProcess`]): a child forked by `multiprocessing` or a
//! preloading server starts its own on its first delivery, where its parent's does not exist.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Sender, channel};

use tethered::__private::PerProcess;

/// A delivery: converts an outcome under the GIL and hands it to its loop.
type Delivery = Box<dyn FnOnce() + Send>;

/// This process's delivery thread's queue; `None` if the thread could not be started.
static QUEUE: PerProcess<Option<Sender<Delivery>>> = PerProcess::new(start);

fn start() -> Option<Sender<Delivery>> {
    let (sender, deliveries) = channel::<Delivery>();
    std::thread::Builder::new()
        .name("tethered-pyo3-delivery".into())
        .spawn(move || {
            for delivery in deliveries {
                delivery();
            }
        })
        .ok()
        .map(|_| sender)
}

/// A call's number, which marks the thread that ran its closure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Call(u64);

impl Call {
    /// A number no other call of this process has.
    pub(crate) fn next() -> Call {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        // ORDERING: Relaxed: only uniqueness matters, which the read-modify-write gives.
        Call(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

thread_local! {
    /// The call whose closure this thread ran last, until its outcome is delivered here. A
    /// mark left behind (the outcome was taken elsewhere) only ever matches its own call, which
    /// is delivered once: it is harmless, and the next call's mark replaces it.
    static RETURNED_HERE: Cell<Option<Call>> = const { Cell::new(None) };
}

/// Marks the calling thread as the one that has just run `call`'s closure (called as the
/// closure returns).
pub(crate) fn closure_returned(call: Call) {
    RETURNED_HERE.set(Some(call));
}

/// Runs `delivery` here if `attached` (the caller's thread, which holds the GIL) or if this
/// thread has just run `call`'s closure, else on this process's delivery thread (started on
/// first use).
pub(crate) fn deliver(call: Call, attached: bool, delivery: Delivery) {
    if RETURNED_HERE.get() == Some(call) {
        RETURNED_HERE.set(None);
        delivery();
        return;
    }
    if attached {
        delivery();
        return;
    }
    match QUEUE.get() {
        Some(sender) => {
            if let Err(refused) = sender.send(delivery) {
                // The thread is gone (it never ends while its sender lives): deliver here.
                (refused.0)();
            }
        }
        None => delivery(),
    }
}
