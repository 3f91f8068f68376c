//! A JavaScript `AbortSignal`, read from a call's options (`{ signal }`) as a plain object (its
//! `aborted`, its `reason`), and listened to with `addEventListener("abort", f, { once: true })`
//! (see `abort.rs`). napi-rs's own `AbortSignal` conversion sets the signal's `onabort`, which
//! would overwrite a handler of the caller's and break a signal shared by many jobs.

use napi::bindgen_prelude::{JsValue, Object, Unknown};
use napi::{Env, ValueType};

use crate::helpers;

/// A signal the caller passed, checked to look like an `AbortSignal`.
pub(crate) struct Signal<'env> {
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
        Ok(Begun::Signal(Signal { object }))
    }
}

impl<'env> Signal<'env> {
    pub(crate) fn object(&self) -> &Object<'env> {
        &self.object
    }
}
