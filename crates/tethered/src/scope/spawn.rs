//! Starting a job in a scope: it takes a slot or waits for one, and the scope lists it.
//! An external job's start ([`external`](crate::bridge::external) in a scope) takes a slot the
//! same way.

use super::{Entry, Lifecycle, ScopeState};
use crate::completer::Completer;
use crate::deferred::Deferred;
use crate::job::{FinishObserver, Job, JobControl, external_placeholder};
use crate::native::{AbortableNative, accepted, make, prepare};
use crate::options::JobOptions;
use crate::reason::CancelReason;
use crate::spawn_error::SpawnError;
use crate::spawner::{Runnable, submit};
use crate::sync::{self, Arc};
use crate::token::CancelToken;

impl ScopeState {
    /// Starts `f` in the scope, with `options` (whose placement is this scope).
    pub(crate) fn spawn_job<T, F>(
        self: Arc<Self>,
        options: JobOptions,
        f: F,
    ) -> Result<AbortableNative<T>, SpawnError>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        let generation = sync::lock(&self.inner).generation.token();
        let observer: Arc<dyn FinishObserver> = self.clone();
        let (job, runnable) = prepare(&options, Some(&generation), Some(observer), f)?;
        drop(generation);
        self.admit(job, runnable, Dispatch::Spawner)
    }

    /// An external job whose work `start` begins once the scope has a slot for it (see
    /// [`external`](crate::bridge::external)).
    pub(crate) fn external_job<T, S>(
        self: Arc<Self>,
        options: JobOptions,
        start: S,
    ) -> Result<AbortableNative<T>, SpawnError>
    where
        T: Send + 'static,
        S: FnOnce(Completer<T>) + Send + 'static,
    {
        let generation = sync::lock(&self.inner).generation.token();
        let observer: Arc<dyn FinishObserver> = self.clone();
        let job = make(
            &options,
            Some(&generation),
            Some(observer),
            external_placeholder::<T>(),
        )?;
        drop(generation);
        let runnable = Runnable::new(Arc::new(Deferred::new(job.clone(), start)));
        self.admit(job, runnable, Dispatch::Inline)
    }

    /// Lists `job` in the scope, and hands its runnable out now (a slot is free) or queues it
    /// until a slot frees.
    fn admit<T, F>(
        &self,
        job: Arc<Job<T, F>>,
        runnable: Runnable,
        dispatch: Dispatch,
    ) -> Result<AbortableNative<T>, SpawnError>
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
        let handle = accepted(job.clone(), &*self.spawner)?;
        // A cancel that came before the job was accepted (while it was being handed out)
        // left a waiting job in place: it leaves now, rather than when a slot frees.
        if job.source().is_cancelled() {
            job.finish_if_queued();
        }
        Ok(handle)
    }
}

/// Where a job that got a slot at once is handed out.
#[derive(Clone, Copy)]
enum Dispatch {
    /// To the scope's spawner.
    Spawner,
    /// Run here, on the calling thread: an external job's start, which only begins work that
    /// runs elsewhere.
    Inline,
}
