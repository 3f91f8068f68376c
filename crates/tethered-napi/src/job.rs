//! One job and its promise: the settle-once slot, the abort listener, and the driver that
//! settles the promise when the job's handle completes.
//!
//! # States of the promise
//!
//! ```text
//!  Pending (the slot holds the deferred) ──first of: the signal fired · a cancel (unjoined) · the job finished──▶ Settled (the slot is empty)
//! ```
//!
//! Whoever takes the deferred out of the slot settles it; everyone after finds the slot empty
//! and settles nothing. The settling itself runs on the JavaScript thread: the deferred's
//! threadsafe function carries a resolver there, and napi-rs drops it unrun (never touching
//! the environment) when the environment is gone.
//!
//! # Invariants
//!
//! 1. The slot's lock is held only to take the deferred: never while cancelling, dropping a
//!    callback guard, or calling into JavaScript.
//! 2. Every resolver releases the job from its signal's listener (`listeners::release`),
//!    except the listener's own rejection, which releases it before.
//! 3. The environment's running count goes down once per job, after its promise was handed
//!    its outcome (or found settled), so a teardown waiting on it sees jobs that returned.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use napi::bindgen_prelude::{Object, PromiseRaw, ToNapiValue};
use napi::{Env, Error, JsDeferred, JsValue, Status, sys};
use tethered::{AbortableNative, CallbackGuard, CancelReason, CancelSource, NativeError};

use crate::environment::{self, Entry, Running};
use crate::listeners::{self, OnAbort};
use crate::signal::{self, Reason, Signal};
use crate::sync::{self, Mutex};

/// What a finished closure leaves behind: its value, converted on the JavaScript thread.
pub(crate) type Convert = Box<dyn FnOnce(&Env) -> napi::Result<sys::napi_value> + Send>;

/// A job, or why it did not start.
pub(crate) type Spawned = Result<AbortableNative<Convert>, tethered::SpawnError>;

type Resolver = Box<dyn FnOnce(Env) -> napi::Result<sys::napi_value> + Send>;
type Deferred = JsDeferred<sys::napi_value, Resolver>;

/// How a job starts: its options, from the [`Builder`](crate::Builder).
pub(crate) struct Start<'a> {
    /// Settle only once the closure returned, also after a cancel.
    pub(crate) joined: bool,
    /// Spawns the job as a child of the given source's token.
    pub(crate) spawn: Box<dyn FnOnce(&CancelSource) -> Spawned + 'a>,
    /// The caller's parent token, if any.
    pub(crate) parent: Option<tethered::CancelToken>,
}

/// Starts a job for `env` and returns its promise.
pub(crate) fn start<'env, T>(
    env: &'env Env,
    signal: Option<Object<'env>>,
    start: Start<'_>,
) -> napi::Result<PromiseRaw<'env, T>> {
    let signal = signal.map(Signal::read).transpose()?;
    // Everything that may fail or run the caller's code comes before the promise exists, or
    // settles it on the way out: a promise left pending would keep the event loop alive.
    let aborted = match &signal {
        Some(signal) if signal.aborted()? => Some(signal.reason()?),
        _ => None,
    };
    let Entry { id, root, running } = environment::enter(env)?;
    let (deferred, promise) = env.create_deferred::<sys::napi_value, Resolver>()?;
    let promise = PromiseRaw::new(env.raw(), promise.raw());

    if let Some(reason) = aborted {
        // As `fetch` does: an aborted signal rejects with its reason, and nothing starts.
        deferred.reject(Error::from_unknown_without_coercion(reason));
        return Ok(promise);
    }

    // The job's parent: cancelled by the signal's listener, by the environment's teardown and
    // by the caller's parent token.
    let source = match &start.parent {
        Some(parent) => parent.child(),
        None => CancelSource::new(),
    };
    let shared = Arc::new(Shared {
        id,
        joined: start.joined,
        slot: Mutex::new(Some(deferred)),
        source: source.clone(),
        signal_won: Mutex::new(None),
    });

    if let Some(signal) = &signal
        && let Err(err) = listeners::listen(env, id, signal, shared.clone())
    {
        let Some(deferred) = shared.take() else {
            // The signal fired while its listener was being added, and the promise rejected
            // with its reason: that is the call's outcome (the job never starts).
            return Ok(promise);
        };
        // The caller gets the error, not the promise: settle it quietly (a rejection nothing
        // handles would end the process).
        deferred.resolve(Box::new(|env: Env| Ok(().into_unknown(&env)?.raw())));
        return Err(err);
    }

    let job = match (start.spawn)(&source) {
        Ok(job) => job,
        Err(err) => {
            let _ = listeners::release(env, id);
            if let Some(deferred) = shared.take() {
                deferred.reject(Error::new(
                    Status::GenericFailure,
                    format!("the native job did not start: {err}"),
                ));
            }
            return Ok(promise);
        }
    };

    let mut links = Vec::with_capacity(2);
    {
        let source = source.clone();
        links.push(root.on_cancel(move |reason| {
            source.cancel(reason.clone());
        }));
    }
    if !start.joined {
        // Any cancel rejects the promise at once, whoever cancelled.
        let stopped = shared.clone();
        links.push(job.token().on_cancel(move |reason| stopped.stopped(reason)));
    }
    running.started();
    let driver = Arc::new(Driver {
        shared,
        job: Mutex::new(Some(job)),
        links: Mutex::new(links),
        running,
    });
    driver.poll();
    Ok(promise)
}

/// What the job's promise side shares with the listener, the cancel callback and the driver.
struct Shared {
    id: u64,
    joined: bool,
    /// The deferred, until it is taken to settle the promise (invariant 1).
    slot: Mutex<Option<Deferred>>,
    /// The job's parent.
    source: CancelSource,
    /// The reason the signal cancelled the job with, if that cancel came before any other.
    signal_won: Mutex<Option<CancelReason>>,
}

impl Shared {
    fn take(&self) -> Option<Deferred> {
        sync::lock(&self.slot).take()
    }

    /// The job was cancelled (unjoined jobs only): rejects the promise at once.
    fn stopped(&self, reason: &CancelReason) {
        let Some(deferred) = self.take() else {
            return;
        };
        let (id, reason) = (self.id, reason.clone());
        deferred.resolve(Box::new(move |env: Env| {
            let fired = listeners::release(&env, id);
            Err(match fired {
                Some(value) => Error::from_unknown_without_coercion(value),
                None => signal::abort_error(&env, &reason),
            })
        }));
    }
}

impl OnAbort for Shared {
    /// The signal fired (on the JavaScript thread): cancels the job with the signal's reason
    /// and, unless joined, rejects with it now.
    fn aborted(&self, env: &Env, reason: Option<&Reason<'_>>) {
        let cancel = reason.map_or(CancelReason::custom("aborted"), |reason| {
            reason.cancel.clone()
        });
        if !self.joined {
            // Done with the signal: the promise settles here. Before the cancel, so the
            // cancel's own callback finds the promise settled.
            let _ = listeners::release(env, self.id);
            if let Some(deferred) = self.take() {
                match reason {
                    Some(reason) => {
                        deferred.reject(Error::from_unknown_without_coercion(reason.value));
                    }
                    None => deferred.reject(signal::abort_error(env, &cancel)),
                }
            }
        }
        if self.source.cancel(cancel.clone()) {
            // The signal's cancel came first: a joined promise rejects with its reason.
            *sync::lock(&self.signal_won) = Some(cancel);
        }
    }
}

/// Polls the job's handle, woken when it completes, and settles the promise then.
struct Driver {
    shared: Arc<Shared>,
    job: Mutex<Option<AbortableNative<Convert>>>,
    links: Mutex<Vec<CallbackGuard>>,
    running: Arc<Running>,
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
        self.finish(outcome);
    }

    fn finish(&self, outcome: Result<Convert, NativeError<Convert>>) {
        // Outside every lock of the job (invariant 1).
        let links = std::mem::take(&mut *sync::lock(&self.links));
        drop(links);
        // What the closure returned is user data whose drop may panic: contained wherever it
        // is dropped (here, on the JavaScript thread, or inside napi-rs when the environment
        // went and the resolver is dropped unrun).
        let outcome = Contained(Some(outcome));
        if let Some(deferred) = self.shared.take() {
            let shared = self.shared.clone();
            deferred.resolve(Box::new(move |env: Env| settle(&env, &shared, outcome)));
        } else {
            // Settled already (the signal fired, or a cancel rejected it).
            drop(outcome);
        }
        self.running.finished();
    }
}

/// The promise's outcome, on the JavaScript thread.
fn settle(
    env: &Env,
    shared: &Shared,
    mut outcome: Contained<Result<Convert, NativeError<Convert>>>,
) -> napi::Result<sys::napi_value> {
    let fired = listeners::release(env, shared.id);
    let signal_won = sync::lock(&shared.signal_won).clone();
    let Some(outcome) = outcome.0.take() else {
        return Err(Error::new(
            Status::GenericFailure,
            "the job's outcome is gone",
        ));
    };
    match outcome {
        Ok(convert) => match tethered::catch_panic(|| convert(env)) {
            Ok(converted) => converted,
            Err(panic) => Err(Error::new(
                Status::GenericFailure,
                format!(
                    "converting the native job's value to JavaScript panicked: {}",
                    panic
                        .message()
                        .unwrap_or("(a payload that is not a string)")
                ),
            )),
        },
        Err(NativeError::Panicked(panic)) => Err(Error::new(
            Status::GenericFailure,
            format!(
                "the native job panicked: {}",
                panic
                    .message()
                    .unwrap_or("(a payload that is not a string)")
            ),
        )),
        Err(err) => {
            // The signal's reason only if the signal's cancel is the one the job saw.
            let rejection = match (fired, err.cancel_reason()) {
                (Some(value), Some(reason)) if signal_won.as_ref() == Some(reason) => {
                    Error::from_unknown_without_coercion(value)
                }
                (_, Some(reason)) => signal::abort_error(env, reason),
                (_, None) => Error::new(Status::GenericFailure, err.to_string()),
            };
            tethered::drop_contained(err);
            Err(rejection)
        }
    }
}

/// A value whose drop is contained ([`tethered::drop_contained`]) wherever it happens.
struct Contained<T>(Option<T>);

impl<T> Drop for Contained<T> {
    fn drop(&mut self) {
        if let Some(value) = self.0.take() {
            tethered::drop_contained(value);
        }
    }
}

/// Converts a closure's value on the JavaScript thread.
pub(crate) fn convert<V: ToNapiValue + Send + 'static>(value: napi::Result<V>) -> Convert {
    Box::new(move |env: &Env| Ok(value?.into_unknown(env)?.raw()))
}
