//! Listing a job in a scope: it takes a slot or waits for one, and the scope lists it. The job
//! itself is made where every job is (`native/start.rs`), as a child of the scope's
//! [`generation`](ScopeState::generation) with the scope as its finish observer.

use super::{Entry, Lifecycle, ScopeState};
use crate::job::{Job, JobControl};
use crate::reason::CancelReason;
use crate::spawn_error::SpawnError;
use crate::spawner::{Runnable, Spawner, submit};
use crate::sync::{self, Arc};
use crate::token::CancelToken;

impl ScopeState {
    /// The token every job started now is a child of.
    pub(crate) fn generation(&self) -> CancelToken {
        sync::lock(&self.inner).generation.token()
    }

    /// The scope's spawner, whose refusal names why a job it dropped did not start.
    pub(crate) fn spawner(&self) -> &(dyn Spawner + Send + Sync) {
        &*self.spawner
    }

    /// Lists `job` in the scope, and hands its runnable out now (a slot is free) or queues it
    /// until a slot frees.
    ///
    /// `Ok` once the job is listed and handed out (or waiting); the caller then accepts it
    /// and, if a cancel came while it was handed out, finishes it if it is still queued.
    pub(crate) fn admit<T, F>(
        &self,
        job: &Arc<Job<T, F>>,
        runnable: Runnable,
        dispatch: Dispatch,
    ) -> Result<(), SpawnError>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        let id = job.id();
        let submit_now = {
            let mut inner = sync::lock(&self.inner);
            if inner.lifecycle == Lifecycle::Closed {
                drop(inner);
                // Dropping the runnable finishes the job unrun; the scope never saw it.
                drop(runnable);
                return Err(SpawnError::ScopeClosed);
            }
            let holds_slot = inner.has_free_slot();
            let control: Arc<dyn JobControl> = job.clone();
            let (pending, submit_now) = if holds_slot {
                inner.holding_slot += 1;
                (None, Some(runnable))
            } else {
                (Some(inner.pending.push_back((id, runnable))), None)
            };
            inner.jobs.insert(
                id,
                Entry {
                    job: control,
                    holds_slot,
                    pending,
                },
            );
            submit_now
        };
        if let Some(runnable) = submit_now {
            let submitted = match dispatch {
                Dispatch::Spawner => submit(&*self.spawner, runnable),
                Dispatch::Inline => {
                    runnable.run();
                    Ok(())
                }
            };
            if let Err(err) = submitted {
                // Refused: the job finishes unrun at once, and leaves the scope.
                job.stop_unrun(CancelReason::Shutdown);
                return Err(err);
            }
        }
        Ok(())
    }
}

/// Where a job that got a slot at once is handed out.
#[derive(Clone, Copy)]
pub(crate) enum Dispatch {
    /// To the scope's spawner.
    Spawner,
    /// Run here, on the calling thread: an external job's start, which only begins work that
    /// runs elsewhere.
    Inline,
}
