//! One thread of this crate's own delivers finished jobs' outcomes to Python.
//!
//! A job's handle wakes its link on whatever thread finished the job. That is usually the
//! job's own thread, but a cancel finishes a job whose closure had not started on the thread
//! that cancels: a thread of the application's (a scope's `cancel_all`, a parent token's
//! cancel), which may hold locks of its own. Taking the GIL there would stall it behind the
//! interpreter, or deadlock it if the GIL's holder waits for one of those locks. So no waker
//! takes the GIL: every delivery (converting the outcome under the GIL and handing it to the
//! loop) runs on this one thread, in the order the jobs finished.
//!
//! If the OS refuses the thread, deliveries run where the job finished, as a last resort.

use std::sync::OnceLock;
use std::sync::mpsc::{Sender, channel};

/// A delivery: converts an outcome under the GIL and hands it to its loop.
type Delivery = Box<dyn FnOnce() + Send>;

/// The delivery thread's queue; `None` if the thread could not be started.
static QUEUE: OnceLock<Option<Sender<Delivery>>> = OnceLock::new();

/// Runs `delivery` on the delivery thread (started on first use).
pub(crate) fn deliver(delivery: Delivery) {
    let queue = QUEUE.get_or_init(|| {
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
    });
    match queue {
        Some(sender) => {
            if let Err(refused) = sender.send(delivery) {
                // The thread is gone (it never ends while its sender lives): deliver here.
                (refused.0)();
            }
        }
        None => delivery(),
    }
}
