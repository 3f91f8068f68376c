//! A signal's abort, where it enters the crate: the one `abort` listener of a signal is
//! JavaScript (`helpers.rs`), which reads the signal's reason once and calls the environment's
//! [`fired`] function for each job on the signal, newest first; the job cancels its token and
//! settles its promise (`job.rs`), through `errors.rs`, `promise.rs` and `environment.rs`, in
//! that order: an abort passes each file once, top-down.
//!
//! Jobs that share a signal share its listener (never `onabort`, which a caller may use), so a
//! signal shared by a thousand calls carries one listener of ours and never trips Node's
//! `MaxListenersExceededWarning`; the last of them to settle removes it. A signal is recognised
//! by a `WeakMap` of the environment's helpers, so nothing is written on the caller's object
//! and a signal dropped by JavaScript is not kept alive.
//!
//! # States of a signal's entry (kept by the helpers)
//!
//! ```text
//!  (none) ──first job listens──▶ Listening ──the signal fires──▶ Fired
//!  Listening ──its last job settles──▶ (none; listener removed)
//!  Fired ──its last job settles──▶ (none; the listener went with `once`)
//! ```
//!
//! In `Fired`, the jobs still in the entry are joined ones, waiting for their closures; each
//! rejects with the signal's reason as its `cause` when it settles. A job that listens on a
//! signal whose entry fired (a hand-made signal that reads not-aborted after firing) gets a
//! fresh entry.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use napi::Env;
use napi::bindgen_prelude::{External, Function, FunctionRef, JsValue, Object, Unknown};
use tethered::CancelReason;

use crate::helpers;

/// What a job does when its signal fires, on the environment's thread.
pub(crate) trait OnAbort {
    /// The signal fired: [`CancelReason::Timeout`] for a `TimeoutError` reason
    /// (`AbortSignal.timeout(ms)`), [`CancelReason::Dropped`] (the caller gave up) otherwise;
    /// `text` is the reason's `message`, or its text (JSON for a plain object).
    fn aborted(&self, env: &Env, kind: CancelReason, text: String);
}

/// A job's handler, held by the signal's entry in JavaScript (and dropped with it).
type Handler = External<Arc<dyn OnAbort>>;

thread_local! {
    /// Each environment's [`fired`] function, made with its first listening job.
    static FIRED: RefCell<HashMap<usize, FunctionRef<(), ()>>> = RefCell::new(HashMap::new());
}

/// Job `id` listens on `signal`: `on_abort` hears it fire, until the job's promise settles.
///
/// # Errors
///
/// A Node-API failure, or the signal's `addEventListener` throwing; nothing is kept then.
pub(crate) fn listen(
    env: &Env,
    id: u64,
    signal: &Object<'_>,
    on_abort: Arc<dyn OnAbort>,
) -> napi::Result<()> {
    let fired = fired_function(env)?;
    let handler: Handler = External::new(on_abort);
    let _: Unknown<'_> = helpers::call(
        env,
        "listen",
        (
            *signal,
            id as f64,
            handler.into_unknown(env)?,
            fired.to_unknown(),
        ),
    )?;
    Ok(())
}

/// The environment's [`fired`] function, made on first use.
fn fired_function(env: &Env) -> napi::Result<Function<'_, (), ()>> {
    let key = env.raw() as usize;
    if let Some(known) = FIRED.with_borrow(|all| all.get(&key).map(|f| f.borrow_back(env))) {
        return known;
    }
    let function = env.create_function_from_closure::<(), (), _>("tetheredNapiAbort", |ctx| {
        let handler: &Handler = ctx.get(0)?;
        let timeout: bool = ctx.get(1)?;
        let text: String = ctx.get(2)?;
        fired(ctx.env, handler.as_ref(), timeout, text);
        Ok(())
    })?;
    let kept = function.create_ref()?;
    FIRED.with_borrow_mut(|all| all.insert(key, kept));
    Ok(function)
}

/// A signal fired, for one of its jobs: the abort enters the crate here.
fn fired(env: &Env, job: &Arc<dyn OnAbort>, timeout: bool, text: String) {
    let kind = if timeout {
        CancelReason::Timeout
    } else {
        CancelReason::Dropped
    };
    job.aborted(env, kind, text);
}

/// Forgets an environment's function (its teardown).
pub(crate) fn forget(env_key: usize) {
    let gone = FIRED.with_borrow_mut(|all| all.remove(&env_key));
    drop(gone);
}
