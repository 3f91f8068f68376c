//! A JavaScript `AbortSignal`, read from a call's options (`{ signal }`) as a plain object:
//! `aborted`, `reason`, and a listener added with `addEventListener("abort", f, { once: true })`
//! and removed with `removeEventListener`. napi-rs's own `AbortSignal` conversion sets the
//! signal's `onabort`, which would overwrite a handler of the caller's and break a signal shared
//! by many jobs.

use napi::bindgen_prelude::{Function, JsObjectValue, JsValue, Object, ToNapiValue, Unknown};
use napi::{Env, ValueType};
use tethered::CancelReason;

use crate::helpers;

/// A signal the caller passed, checked to look like an `AbortSignal`.
pub(crate) struct Signal<'env> {
    env: &'env Env,
    object: Object<'env>,
}

/// What a call's options ask for, read by the helpers' `begin`.
pub(crate) enum Begun<'env> {
    /// No signal: nothing can abort the call.
    NoSignal,
    /// A signal, not aborted yet.
    Signal(Signal<'env>),
    /// The promise the call settles with at once: a `TypeError` for bad options, an
    /// `AbortError` for a signal aborted already, or what a getter of the caller's threw.
    Settled(Object<'env>),
}

/// Reads a call's options (`{ signal }`) as [`Begun`].
pub(crate) fn begin<'env>(
    env: &'env Env,
    options: Option<Unknown<'env>>,
) -> napi::Result<Begun<'env>> {
    let begun: Unknown<'env> = helpers::call(env, "begin", (options,))?;
    if begun.get_type()? != ValueType::Object {
        return Ok(Begun::NoSignal);
    }
    let object = begun.coerce_to_object()?;
    if begun.is_promise()? {
        Ok(Begun::Settled(object))
    } else {
        Ok(Begun::Signal(Signal { env, object }))
    }
}

impl<'env> Signal<'env> {
    pub(crate) fn object(&self) -> &Object<'env> {
        &self.object
    }

    /// `signal.addEventListener("abort", listener, { once: true })`; what it throws is the
    /// `Err`, and left pending nowhere.
    pub(crate) fn listen(&self, listener: &Function<'_, (), ()>) -> napi::Result<()> {
        let _: Unknown<'_> =
            helpers::call(self.env, "listen", (self.object, listener.to_unknown()))?;
        Ok(())
    }
}

/// A fired signal's `reason`, and what the job's token reads for it.
pub(crate) struct Reason<'env> {
    /// `signal.reason` (or what reading it threw).
    pub(crate) value: Unknown<'env>,
    /// [`CancelReason::Timeout`] for a `TimeoutError` (`AbortSignal.timeout(ms)`),
    /// [`CancelReason::Dropped`] (the caller gave up) otherwise.
    pub(crate) cancel: CancelReason,
    /// The reason's `message`, or its text (`String(reason)`): the job's cause.
    pub(crate) text: String,
}

/// Reads `signal`'s reason; `None` only if Node-API itself failed.
pub(crate) fn inspect<'env>(env: &'env Env, signal: &Object<'_>) -> Option<Reason<'env>> {
    let found: Object<'_> = helpers::call(env, "inspect", (*signal,)).ok()?;
    let value: Unknown<'_> = found.get_element(0).ok()?;
    let timeout: bool = found.get_element(1).ok()?;
    let text: String = found.get_element(2).ok()?;
    Some(Reason {
        value: value.into_unknown(env).ok()?,
        cancel: if timeout {
            CancelReason::Timeout
        } else {
            CancelReason::Dropped
        },
        text,
    })
}

/// `signal.removeEventListener("abort", listener)`, whatever the signal throws.
pub(crate) fn unlisten(env: &Env, signal: &Object<'_>, listener: &Function<'_, (), ()>) {
    let _: napi::Result<Unknown<'_>> =
        helpers::call(env, "unlisten", (*signal, listener.to_unknown()));
}
