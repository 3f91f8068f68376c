//! A JavaScript `AbortSignal`, read as a plain object: `aborted`, `reason`, and a listener
//! added with `addEventListener("abort", f, { once: true })` and removed with
//! `removeEventListener`. napi-rs's own `AbortSignal` conversion sets the signal's `onabort`,
//! which would overwrite a handler of the caller's and break a signal shared by many jobs.
//!
//! Also the other direction: the error a promise rejects with when something other than the
//! signal cancelled its job (a `DOMException`, as the platform's aborted operations reject).

use napi::bindgen_prelude::{
    FnArgs, Function, JsObjectValue, JsValue, Object, ToNapiValue, Unknown,
};
use napi::{Env, Error, Status, ValueType};
use tethered::CancelReason;

/// A signal the caller passed, checked to look like an `AbortSignal`.
pub(crate) struct Signal<'env> {
    object: Object<'env>,
}

impl<'env> Signal<'env> {
    /// The signal, or a `TypeError` naming what was passed instead.
    pub(crate) fn read(object: Object<'env>) -> napi::Result<Signal<'env>> {
        let looks_right = ["addEventListener", "removeEventListener"]
            .iter()
            .all(|method| {
                object
                    .get_named_property::<Unknown<'_>>(method)
                    .and_then(|value| value.get_type())
                    .is_ok_and(|kind| kind == ValueType::Function)
            })
            && object
                .get_named_property::<Unknown<'_>>("aborted")
                .and_then(|value| value.get_type())
                .is_ok_and(|kind| kind == ValueType::Boolean);
        if looks_right {
            Ok(Signal { object })
        } else {
            Err(Error::new(
                Status::InvalidArg,
                "the signal must be an AbortSignal (an object with a boolean `aborted`, a \
                 `reason`, `addEventListener` and `removeEventListener`), or undefined or null",
            ))
        }
    }

    pub(crate) fn object(&self) -> &Object<'env> {
        &self.object
    }

    pub(crate) fn aborted(&self) -> napi::Result<bool> {
        self.object.get_named_property::<bool>("aborted")
    }

    pub(crate) fn reason(&self) -> napi::Result<Unknown<'env>> {
        self.object.get_named_property::<Unknown<'env>>("reason")
    }

    /// `signal.addEventListener("abort", listener, { once: true })`.
    pub(crate) fn listen(&self, env: &Env, listener: &Function<'_, (), ()>) -> napi::Result<()> {
        let add: Function<'_, FnArgs<(&str, Unknown<'_>, Object<'_>)>, Unknown<'_>> =
            self.object.get_named_property("addEventListener")?;
        let mut options = Object::new(env)?;
        options.set_named_property("once", true)?;
        add.apply(
            self.object,
            FnArgs::from(("abort", listener.to_unknown(), options)),
        )?;
        Ok(())
    }

    /// `signal.removeEventListener("abort", listener)`.
    pub(crate) fn unlisten(&self, listener: &Function<'_, (), ()>) -> napi::Result<()> {
        let remove: Function<'_, FnArgs<(&str, Unknown<'_>)>, Unknown<'_>> =
            self.object.get_named_property("removeEventListener")?;
        remove.apply(self.object, FnArgs::from(("abort", listener.to_unknown())))?;
        Ok(())
    }
}

/// The job's cancel reason for a signal's `reason`: `Timeout` for a `TimeoutError`
/// (`AbortSignal.timeout(ms)`), otherwise a custom reason carrying the reason's message (or
/// its text, for a reason that is no `Error`).
pub(crate) fn cancel_reason(reason: &Unknown<'_>) -> CancelReason {
    let object = match reason.get_type() {
        Ok(ValueType::Object) => reason.coerce_to_object().ok(),
        _ => None,
    };
    if let Some(object) = &object {
        if string_property(object, "name").as_deref() == Some("TimeoutError") {
            return CancelReason::Timeout;
        }
        if let Some(message) = string_property(object, "message") {
            return CancelReason::custom(message);
        }
    }
    let text = match reason.get_type() {
        // `String(symbol)` throws: a symbol's text is its description, which JavaScript alone
        // reads; say what it was instead.
        Ok(ValueType::Symbol) => None,
        _ => reason
            .coerce_to_string()
            .and_then(|text| text.into_utf8())
            .and_then(|text| text.into_owned())
            .ok(),
    };
    CancelReason::custom(text.unwrap_or_else(|| "aborted (with a reason that has no text)".into()))
}

fn string_property(object: &Object<'_>, name: &str) -> Option<String> {
    let value = object.get_named_property::<Unknown<'_>>(name).ok()?;
    if value.get_type().ok()? != ValueType::String {
        return None;
    }
    value
        .coerce_to_string()
        .and_then(|text| text.into_utf8())
        .and_then(|text| text.into_owned())
        .ok()
}

/// What a promise rejects with when its job was cancelled by something other than its signal
/// (a parent token, a scope, the environment's teardown): a `DOMException` named
/// `TimeoutError` for [`CancelReason::Timeout`] and `AbortError` otherwise, as the platform's
/// aborted operations reject, whose message names the reason.
pub(crate) fn abort_error(env: &Env, reason: &CancelReason) -> Error {
    let (name, message) = match reason {
        CancelReason::Timeout => (
            "TimeoutError",
            format!("the native job timed out ({reason})"),
        ),
        _ => (
            "AbortError",
            format!("the native job was cancelled: {reason}"),
        ),
    };
    match dom_exception(env, &message, name) {
        Ok(value) => Error::from_unknown_without_coercion(value),
        Err(_) => Error::new(Status::Cancelled, message),
    }
}

fn dom_exception<'env>(env: &'env Env, message: &str, name: &str) -> napi::Result<Unknown<'env>> {
    let global = env.get_global()?;
    let constructor: Function<'_, FnArgs<(&str, &str)>, Unknown<'_>> =
        global.get_named_property("DOMException")?;
    let value = constructor.new_instance(FnArgs::from((message, name)))?;
    value.into_unknown(env)
}
