//! [`Deferred`]: the runner of an external job that waits for its scope's slot before its work
//! starts (made by [`spawn_external`](crate::spawn_external) in a scope).
//!
//! Its `run` hands the job's [`Completer`] to the start function once the scope has a slot for
//! the job (at once, or on the scope's spawner when one frees); a job cancelled while it waits
//! finishes stopped, and the start function is dropped, never called.

use crate::completer::Completer;
use crate::contain::{drop_contained, run_contained};
use crate::job::{External, Job, RunJob};
use crate::sync::{self, Arc, Mutex};

/// The runner of an external job with a deferred start.
pub(crate) struct Deferred<T: Send + 'static, S> {
    job: Arc<Job<T, External<T>>>,
    /// `None` once called or dropped.
    start: Mutex<Option<S>>,
}

impl<T, S> Deferred<T, S>
where
    T: Send + 'static,
    S: FnOnce(Completer<T>) + Send + 'static,
{
    pub(crate) fn new(job: Arc<Job<T, External<T>>>, start: S) -> Self {
        Deferred {
            job,
            start: Mutex::new(Some(start)),
        }
    }

    fn take_start(&self) -> Option<S> {
        sync::lock(&self.start).take()
    }
}

impl<T, S> RunJob for Deferred<T, S>
where
    T: Send + 'static,
    S: FnOnce(Completer<T>) + Send + 'static,
{
    fn run(&self) {
        let Some(start) = self.take_start() else {
            return;
        };
        if !self.job.begin_external() {
            // Cancelled while it waited (or already finished): the work never starts.
            drop_contained(start);
            return;
        }
        // User code: a panic drops the completer while unwinding, which finishes the job as
        // stopped (see `Completer`'s drop); it does not reach the scope or the spawner.
        let completer = Completer::new(self.job.clone());
        run_contained(move || start(completer));
    }

    fn drop_unrun(&self) {
        if let Some(start) = self.take_start() {
            drop_contained(start);
        }
        self.job.drop_unrun();
    }

    fn name(&self) -> Option<&str> {
        self.job.name()
    }

    fn is_cancelled(&self) -> bool {
        self.job.is_cancelled()
    }
}
