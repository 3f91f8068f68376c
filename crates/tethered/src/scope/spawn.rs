//! Starting a job in a scope: it takes a slot or waits for one, and the scope lists it.

use super::{Entry, Lifecycle, NativeScope};
use crate::job::{FinishObserver, JobControl, JobOptions};
use crate::native::AbortableNative;
use crate::reason::CancelReason;
use crate::spawn_error::SpawnError;
use crate::spawner::submit;
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
            if let Err(err) = submit(&*self.state.spawner, runnable) {
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
