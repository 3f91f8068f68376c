//! Starting a job in a scope: it takes a slot or waits for one, and the scope lists it.
//! An external job's start (`Builder::external_in`) takes a slot the same way.

use super::{Entry, Lifecycle, NativeScope};
use crate::completer::Completer;
use crate::deferred::Deferred;
use crate::job::{FinishObserver, Job, JobControl, JobOptions, external_placeholder};
use crate::native::AbortableNative;
use crate::reason::CancelReason;
use crate::spawn_error::SpawnError;
use crate::spawner::{Runnable, submit};
use crate::sync::{self, Arc};
use crate::token::CancelToken;

impl NativeScope {
    pub(crate) fn spawn_with<T, F>(
        &self,
        parent: Option<&CancelToken>,
        options: JobOptions,
        f: F,
    ) -> Result<AbortableNative<T>, SpawnError>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        let generation = sync::lock(&self.state.inner).generation.token();
        let observer: Arc<dyn FinishObserver> = self.state.clone();
        let (job, runnable) =
            AbortableNative::prepare(Some(&generation), options, Some(observer), f);
        drop(generation);
        self.admit(job, runnable, parent, Dispatch::Spawner)
    }

    /// An external job whose work `start` begins once the scope has a slot for it (see
    /// `Builder::external_in`).
    pub(crate) fn external_with<T, S>(
        &self,
        parent: Option<&CancelToken>,
        options: JobOptions,
        start: S,
    ) -> Result<AbortableNative<T>, SpawnError>
    where
        T: Send + 'static,
        S: FnOnce(Completer<T>) + Send + 'static,
    {
        let generation = sync::lock(&self.state.inner).generation.token();
        let observer: Arc<dyn FinishObserver> = self.state.clone();
        let job = AbortableNative::make(
            Some(&generation),
            options,
            Some(observer),
            external_placeholder::<T>(),
        );
        drop(generation);
        let runnable = Runnable::new(Arc::new(Deferred::new(job.clone(), start)));
        self.admit(job, runnable, parent, Dispatch::Inline)
    }

    /// Lists `job` in the scope, and hands its runnable out now (a slot is free) or queues it
    /// until a slot frees.
    fn admit<T, F>(
        &self,
        job: Arc<Job<T, F>>,
        runnable: Runnable,
        parent: Option<&CancelToken>,
        dispatch: Dispatch,
    ) -> Result<AbortableNative<T>, SpawnError>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        if let Some(parent) = parent {
            // A second parent, besides the scope's: linked by a callback that the job drops
            // when it finishes.
            let source = job.source().clone();
            let link = parent.on_cancel(move |reason| {
                source.cancel(reason.clone());
            });
            job.keep_guard(link);
            // The second parent's deadline, as of now, is the job's too.
            if let Some(deadline) = parent.deadline() {
                job.source().state.record_deadline(deadline);
            }
        }
        let id = job.id();
        let submit_now = {
            let mut inner = sync::lock(&self.state.inner);
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
                Dispatch::Spawner => submit(&*self.state.spawner, runnable),
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
        let handle = AbortableNative::accepted(job.clone(), &*self.state.spawner)?;
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
