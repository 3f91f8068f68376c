//! One job and its promise: the outcome slot, the abort from its signal, and the driver that
//! hands the outcome to the JavaScript thread when the job's handle resolves.
//!
//! # States of a job
//!
//! ```text
//!  Running (no outcome) ──the handle resolved (returned, stopped, abandoned past the grace)──▶ Ready (the slot holds the outcome)
//!  Ready ──settled on the JavaScript thread (its delivery, or the abort listener at once)──▶ Settled (the slot is empty, taken)
//! ```
//!
//! The outcome is taken out of the slot once, on the JavaScript thread, by whichever comes
//! first: the delivery the driver queued through the environment's threadsafe function, or the
//! signal's listener, which cancels the job and settles it within the same `abort()` when the
//! handle resolved then (a grace of zero, the default: as `fetch` rejects). The promise itself
//! is a JavaScript one (`promise.rs`), settled by calling its resolving functions.
//!
//! # Invariants
//!
//! 1. The slot's lock is held only to put or take the outcome: never while cancelling, waking,
//!    or calling into JavaScript.
//! 2. Every settle takes the job off its signal's listener (the helpers' `settle` does both).
//! 3. The environment's count of running closures goes down when the closure returns, whether
//!    its handle still waits for it or not, so a teardown waits for closures, not promises.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use napi::bindgen_prelude::{PromiseRaw, Unknown};
use napi::{Env, JsValue};
use tethered::{
    AbortHandle, AbortableNative, CancelReason, Cause, JobOptions, Placement, Tethered,
};

use crate::abort::{self, OnAbort};
use crate::environment::{self, Delivery, Entry};
use crate::errors::{self, Outcome};
use crate::output::Convert;
use crate::panics;
use crate::pool;
use crate::promise;
use crate::signal::{self, Begun};
use crate::sync::{self, Mutex};

/// Starts `f` for `env` with `options` and returns its promise. `options` is the caller's
/// JavaScript options object, unchecked.
pub(crate) fn start<'env, P, T>(
    env: &'env Env,
    call: Option<Unknown<'env>>,
    options: JobOptions<P>,
    f: Box<dyn FnOnce(tethered::CancelToken) -> Convert + Send>,
) -> napi::Result<PromiseRaw<'env, T>>
where
    P: Placement,
{
    let Some(Entry {
        id,
        root,
        running,
        delivery,
    }) = environment::enter(env)?
    else {
        return promise::rejected(env, errors::closing());
    };
    // Everything that may fail or run the caller's code comes before the job exists, and fails
    // as a rejection, as the platform's promise-returning functions do; an aborted signal
    // rejects at once, and nothing starts, as `fetch` does.
    let signal = match signal::begin(env, call)? {
        Begun::NoSignal => None,
        Begun::Signal(signal) => Some(signal),
        Begun::Settled(promise) => return Ok(PromiseRaw::new(env.raw(), promise.raw())),
    };
    let (promise, settle) = promise::pending(env, id)?;
    let shared = Arc::new(Shared {
        abort: Mutex::new(None),
        slot: Mutex::new(None),
        signal_cause: Mutex::new(None),
        settle,
    });
    // Listening comes before the job exists: a signal that fires while its listener is added
    // (a hand-made one) rejects the promise there, and the job never starts.
    if let Some(signal) = &signal {
        if let Err(err) = abort::listen(env, id, signal.object(), shared.clone()) {
            // The caller's signal threw from `addEventListener` (after firing, perhaps: then
            // the promise is settled already and this changes nothing).
            match napi::bindgen_prelude::ToNapiValue::into_unknown(err, env) {
                Ok(thrown) => shared
                    .settle
                    .settle(env, errors::Settlement::Reject(thrown)),
                Err(err) => shared.settle.settle(env, errors::unmade(&err)),
            }
            return Ok(promise);
        }
        if shared.settle.is_settled(env) {
            return Ok(promise);
        }
    }

    let closure_running = running.clone();
    let options = options.child_of(&root).grace_or(std::time::Duration::ZERO);
    // A closure's panic rejects its promise: not printed, unless it aborts the process.
    let quiet = options.panic_policy() == tethered::PanicPolicy::Catch;
    let spawned = pool::spawn(options, move |token| {
        let _counted = closure_running.enter();
        if quiet {
            panics::quietly(|| f(token))
        } else {
            f(token)
        }
    });
    let job = match spawned {
        Ok(job) => job,
        Err(err) => {
            shared.settle.settle(env, errors::spawn_refused(&err));
            return Ok(promise);
        }
    };
    running.track(job.abort_handle());
    *sync::lock(&shared.abort) = Some(job.abort_handle().clone());
    let driver = Arc::new(Driver {
        shared,
        job: Mutex::new(Some(job)),
        delivery,
    });
    driver.poll();
    Ok(promise)
}

/// What the job's promise side shares with the listener and the driver.
struct Shared {
    /// The job's abort handle, once it exists.
    abort: Mutex<Option<AbortHandle>>,
    /// The outcome, between the handle's resolution and its settling (invariant 1).
    slot: Mutex<Option<Outcome>>,
    /// The cause the signal's abort cancelled the job with, if that cancel decided its reason.
    signal_cause: Mutex<Option<Cause>>,
    settle: promise::Settle,
}

impl Shared {
    /// Settles the promise with the outcome, if it is ready and not settled yet (JavaScript
    /// thread).
    fn settle(&self, env: &Env) {
        let Some(outcome) = sync::lock(&self.slot).take() else {
            return;
        };
        let signal_cause = sync::lock(&self.signal_cause).clone();
        let settlement = errors::settlement(env, outcome, signal_cause.as_ref());
        self.settle.settle(env, settlement);
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // An outcome never settled (its environment went): user data whose drop may panic.
        if let Some(outcome) = sync::lock(&self.slot).take() {
            tethered::__private::drop_contained(outcome);
        }
    }
}

impl OnAbort for Shared {
    /// The signal fired (on the JavaScript thread): cancels the job with the signal's reason,
    /// and settles the promise now if that resolved the handle (a grace of zero).
    fn aborted(&self, env: &Env, kind: CancelReason, text: String) {
        let Some(abort) = sync::lock(&self.abort).clone() else {
            // The signal fired while its listener was being added: nothing started.
            self.settle.settle(env, errors::aborted_before_start(kind));
            return;
        };
        let cause = Cause::msg(text);
        if abort.cancel_with_cause(kind, cause.clone()) {
            *sync::lock(&self.signal_cause) = Some(cause);
        }
        self.settle(env);
    }
}

/// Polls the job's handle, woken when it resolves, and hands the outcome to the JavaScript
/// thread then.
struct Driver {
    shared: Arc<Shared>,
    job: Mutex<Option<AbortableNative<Convert>>>,
    delivery: Arc<Delivery>,
}

impl Wake for Driver {
    fn wake(self: Arc<Self>) {
        self.poll();
    }
}

impl Driver {
    fn poll(self: &Arc<Self>) {
        let waker = Waker::from(self.clone());
        let outcome = {
            let mut slot = sync::lock(&self.job);
            let Some(job) = slot.as_mut() else {
                return;
            };
            match Pin::new(job).poll(&mut Context::from_waker(&waker)) {
                Poll::Pending => return,
                Poll::Ready(outcome) => {
                    *slot = None;
                    outcome
                }
            }
        };
        // Outside the job's lock (invariant 1).
        *sync::lock(&self.shared.slot) = Some(outcome);
        let shared = self.shared.clone();
        self.delivery
            .send(Box::new(move |env: &Env| shared.settle(env)));
    }
}
