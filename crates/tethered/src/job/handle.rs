//! The handle's side of a job (accepting it, polling and joining its result, letting go of
//! it) and what a scope does with it, through the type-erased views of `mod.rs`.

use std::task::{Context, Poll};

use super::{Handoff, Job, JobControl, JobHandle, Stage, Waiter, settle};
use crate::callback::CallbackGuard;
use crate::contain::drop_contained;
use crate::error::NativeError;
use crate::spawn_error::SpawnError;
use crate::stats::Event;
use crate::sync::{self, Arc};
use crate::token::CancelSource;
use crate::token::CancelToken;

impl<T, F> JobControl for Job<T, F>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    fn id(&self) -> crate::JobId {
        self.id
    }

    fn name(&self) -> Option<&str> {
        self.settings.name.as_deref()
    }

    fn source(&self) -> &CancelSource {
        &self.source
    }

    fn is_finished(&self) -> bool {
        sync::lock(&self.state).stage.is_finished()
    }

    fn finish_if_queued(&self) {
        let Some(f) = self.take_closure(|_| {}) else {
            return;
        };
        self.skip(f);
    }

    fn cancel_reached(&self) {
        {
            let mut state = sync::lock(&self.state);
            if !matches!(state.stage, Stage::Running) || state.watched {
                return;
            }
            state.watched = true;
        }
        let (reason, cause) = self.stop();
        crate::stubborn::cancel_reached(self.id, self.settings.name.clone(), reason, cause);
    }

    fn keep_guard(&self, guard: CallbackGuard) {
        let mut state = sync::lock(&self.state);
        if state.stage.is_finished() {
            drop(state);
            drop(guard);
        } else {
            state.guards.push(guard);
        }
    }

    fn in_scope(&self) -> bool {
        self.observer.is_some()
    }

    fn release(&self) {
        let result = {
            let mut state = sync::lock(&self.state);
            state.waiter = Waiter::Released;
            if matches!(state.stage, Stage::Finished(_)) {
                match std::mem::replace(&mut state.stage, Stage::Consumed) {
                    Stage::Finished(result) => Some(result),
                    _ => unreachable!("checked under the same lock"),
                }
            } else {
                None
            }
        };
        drop_contained(result);
    }

    fn mark_detached(&self) -> bool {
        let mut state = sync::lock(&self.state);
        if state.stage.is_finished() {
            return false;
        }
        if !state.detached {
            state.detached = true;
            self.count(Event::Detached);
            drop(state);
            self.span.detached();
        }
        true
    }
}

impl<T, F> JobHandle<T> for Job<T, F>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    fn accept(&self) -> Result<(), SpawnError> {
        let mut state = sync::lock(&self.state);
        if state.handoff == Handoff::Refused {
            return Err(SpawnError::Rejected);
        }
        state.handoff = Handoff::Accepted;
        self.count(Event::Spawned);
        // Accepted now: counted as cancelled if it finished before (else the finish counts
        // it).
        if state.stage.is_finished() {
            settle(&self.source, self.scope_counters());
        }
        drop(state);
        self.span.spawned();
        Ok(())
    }

    fn accept_refused(&self) {
        let mut state = sync::lock(&self.state);
        state.handoff = Handoff::Accepted;
        self.count(Event::Spawned);
        // Only ever called on a job that finished unrun (while it was still offered).
        settle(&self.source, self.scope_counters());
    }

    fn control(self: Arc<Self>) -> Arc<dyn JobControl> {
        self
    }

    fn poll_result(&self, cx: &mut Context<'_>) -> Poll<Result<T, NativeError<T>>> {
        let mut state = sync::lock(&self.state);
        match &state.stage {
            Stage::Finished(_) => {
                let Stage::Finished(result) = std::mem::replace(&mut state.stage, Stage::Consumed)
                else {
                    unreachable!("matched under the same lock")
                };
                Poll::Ready(result)
            }
            Stage::Consumed => panic!(
                "`AbortableNative` polled after it gave its result (after a `timeout(d, &mut job)` \
                 that answered with the job's own result, await the job only on `Abandoned`; \
                 in a loop of `select!`, disable the branch once it has completed)"
            ),
            Stage::Queued(_) | Stage::Running => {
                if let Waiter::Abandoned(grace) = state.waiter {
                    drop(state);
                    return Poll::Ready(Err(self.abandoned_error(grace)));
                }
                let replaced = match &state.waker {
                    Some(stored) if stored.will_wake(cx.waker()) => None,
                    _ => state.waker.replace(cx.waker().clone()),
                };
                drop(state);
                // A waker's drop is foreign code: never under our lock (invariant 4).
                drop_contained(replaced);
                Poll::Pending
            }
        }
    }

    fn join_blocking(&self) -> Result<T, NativeError<T>> {
        let mut state = sync::lock(&self.state);
        loop {
            match &state.stage {
                Stage::Finished(_) => {
                    let Stage::Finished(result) =
                        std::mem::replace(&mut state.stage, Stage::Consumed)
                    else {
                        unreachable!("matched under the same lock")
                    };
                    return result;
                }
                Stage::Consumed => panic!("`AbortableNative` joined after it completed"),
                Stage::Queued(_) | Stage::Running => {
                    if let Waiter::Abandoned(grace) = state.waiter {
                        drop(state);
                        return Err(self.abandoned_error(grace));
                    }
                    state.sleepers += 1;
                    state = sync::wait(&self.changed, state);
                    state.sleepers -= 1;
                }
            }
        }
    }
}
