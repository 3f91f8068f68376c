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
//! The thread is per process ([`PerProcess`]): a child forked by `multiprocessing` or a
//! preloading server starts its own on its first delivery, where its parent's does not exist.

use std::sync::mpsc::{Sender, channel};

use tethered::bridge::PerProcess;

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

/// Runs `delivery` on this process's delivery thread (started on first use).
pub(crate) fn deliver(delivery: Delivery) {
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
