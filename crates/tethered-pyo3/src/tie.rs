//! [`Tie`]: the state one native job shares with the future that awaits it, apart from Python:
//! the job's handle until its outcome is taken, its registration on the loop's token, whether
//! the future still wants the outcome, and the cancels. `link.rs` adds the future and the
//! delivery; loom models this part.
//!
//! # States
//!
//! ```text
//!  Running { job: Some, loop_link: Some } ──outcome taken (once)──▶ Taken { job: None, loop_link: None }
//!  wanted: true ──future done or freed──▶ false     (independent of the above)
//! ```
//!
//! # Invariants
//!
//! 1. The outcome is taken from the handle once (`job` becomes `None`), by whichever poll
//!    finds it ready first.
//! 2. No lock of the tie is held while cancelling or dropping the loop registration: dropping
//!    it waits for its callback if that runs on another thread right now, and that callback
//!    may be cancelling this job, which wakes and polls this tie.
//! 3. `wanted` only spares work: a delivery that reads a stale `true` still finds the future
//!    done, on the loop thread, and leaves it alone.

use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use tethered::{
    AbortHandle, AbortableNative, CallbackGuard, CancelReason, CancelToken, Cause, NativeError,
    Tethered,
};

use crate::sync::{self, AtomicBool, Mutex, Ordering};

/// One job and what its future's side shares with it.
pub(crate) struct Tie<T: Send + 'static> {
    /// Every cancel of the job goes through it, never through the handle, so a cancel that
    /// finishes a queued job (and wakes the tie on the cancelling thread) never meets the
    /// handle's lock held by itself.
    abort: AbortHandle,
    /// The handle, until its outcome is taken.
    job: Mutex<Option<AbortableNative<T>>>,
    /// The registration on the event loop's token, dropped once the outcome is taken.
    loop_link: Mutex<Option<CallbackGuard>>,
    /// The future may still take the outcome.
    wanted: AtomicBool,
}

impl<T: Send + 'static> Tie<T> {
    /// Ties `job` to `loop_token`: the loop's close (or the interpreter's exit) cancels it.
    pub(crate) fn new(job: AbortableNative<T>, loop_token: &CancelToken) -> Tie<T> {
        let abort = job.abort_handle();
        // Runs at once if the loop's token is cancelled already.
        let loop_link = {
            let abort = abort.clone();
            loop_token.on_cancel(move |reason| {
                abort.cancel(reason);
            })
        };
        Tie {
            abort,
            job: Mutex::new(Some(job)),
            loop_link: Mutex::new(Some(loop_link)),
            wanted: AtomicBool::new(true),
        }
    }

    /// Cancels the job, unless it has finished (with no lock held: invariant 2).
    pub(crate) fn cancel(&self, reason: CancelReason, cause: Option<Cause>) {
        match cause {
            Some(cause) => self.abort.cancel_with_cause(reason, cause),
            None => self.abort.cancel(reason),
        };
    }

    /// The future is done or freed: nothing will take the outcome.
    pub(crate) fn unwanted(&self) {
        // ORDERING: Relaxed: the flag only spares a delivery (invariant 3).
        self.wanted.store(false, Ordering::Relaxed);
    }

    /// Whether the future may still take the outcome.
    pub(crate) fn is_wanted(&self) -> bool {
        // ORDERING: Relaxed, as in `unwanted`.
        self.wanted.load(Ordering::Relaxed)
    }

    /// Polls the job with `waker`; its outcome, once, when it is ready.
    pub(crate) fn poll(&self, waker: &Waker) -> Option<Result<T, NativeError<T>>> {
        let result = {
            let mut slot = sync::lock(&self.job);
            let job = slot.as_mut()?;
            match Pin::new(job).poll(&mut Context::from_waker(waker)) {
                Poll::Pending => return None,
                Poll::Ready(result) => {
                    *slot = None;
                    result
                }
            }
        };
        // Outside the job's lock (invariant 2).
        let registration = sync::lock(&self.loop_link).take();
        drop(registration);
        Some(result)
    }
}
