//! A JavaScript `AbortSignal`, read as a plain object: `aborted`, `reason`, and a listener
//! added with `addEventListener("abort", f, { once: true })` and removed with
//! `removeEventListener`. napi-rs's own `AbortSignal` conversion sets the signal's `onabort`,
//! which would overwrite a handler of the caller's and break a signal shared by many jobs.
//!
//! Also the other direction: the error a promise rejects with when something other than the
//! signal cancelled its job (a `DOMException`, as the platform's aborted operations reject).

use std::cell::RefCell;
use std::collections::HashMap;

use napi::bindgen_prelude::{
    FnArgs, Function, JsObjectValue, JsValue, Object, ObjectRef, ToNapiValue, Unknown,
};
use napi::{Env, Error, Status, ValueType};
use tethered::CancelReason;

/// A signal the caller passed, checked to look like an `AbortSignal`.
pub(crate) struct Signal<'env> {
    object: Object<'env>,
}

impl<'env> Signal<'env> {
    /// The signal, or an `InvalidArg` error saying what a signal must be.
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

    /// `signal.addEventListener("abort", listener, { once: true })`; what it throws is the
    /// `Err`, and left pending nowhere.
    pub(crate) fn listen(&self, env: &Env, listener: &Function<'_, (), ()>) -> napi::Result<()> {
        let helpers = helpers(env)?;
        let listen: Function<'_, FnArgs<(Object<'_>, Unknown<'_>)>, Unknown<'_>> =
            helpers.get_named_property("listen")?;
        listen.call(FnArgs::from((self.object, listener.to_unknown())))?;
        Ok(())
    }
}

/// Code run in JavaScript, where a `try` can contain what the caller's objects throw: a
/// `reason` whose getters, `message` or conversion to text throw (`Object.create(null)`, a
/// revoked `Proxy`), or a hand-made signal whose `reason` or `removeEventListener` throws. An
/// exception that Node-API leaves pending would fail every later call of the listener or
/// resolver and then end the process as an uncaught exception; these never throw, but
/// `listen`, whose error is the caller's to see, does. They are called with napi-rs's
/// `Function::call`, which takes a thrown exception into its `Err` and leaves none pending.
const HELPERS: &str = r#"
return {
  inspect(signal) {
    let reason;
    try { reason = signal.reason; } catch (thrown) { reason = thrown; }
    let timeout = false;
    let text;
    try {
      if (reason !== null && typeof reason === 'object') {
        timeout = reason.name === 'TimeoutError';
        if (typeof reason.message === 'string') text = reason.message;
      }
      if (text === undefined) text = String(reason);
    } catch (_) {
      text = 'aborted (with a reason that has no text)';
    }
    return [reason, timeout, text];
  },
  unlisten(signal, listener) {
    try { signal.removeEventListener('abort', listener); } catch (_) {}
  },
  listen(signal, listener) {
    signal.addEventListener('abort', listener, { once: true });
  },
};
"#;

thread_local! {
    /// The helpers of each environment of this thread, by its `napi_env` address.
    static COMPILED: RefCell<HashMap<usize, ObjectRef<false>>> = RefCell::new(HashMap::new());
}

/// The environment's helpers, compiled on first use.
fn helpers<'env>(env: &'env Env) -> napi::Result<Object<'env>> {
    let key = env.raw() as usize;
    if let Some(known) =
        COMPILED.with_borrow(|all| all.get(&key).map(|helpers| helpers.get_value(env)))
    {
        return known;
    }
    let helpers: Object<'env> = env.run_script(format!("(() => {{{HELPERS}}})()"))?;
    let kept = helpers.create_ref()?;
    COMPILED.with_borrow_mut(|all| all.insert(key, kept));
    Ok(helpers)
}

/// Forgets an environment's helpers (its teardown).
pub(crate) fn forget(env_key: usize) {
    let gone = COMPILED.with_borrow_mut(|all| all.remove(&env_key));
    drop(gone);
}

/// A fired signal's `reason`, and the job's cancel reason for it.
pub(crate) struct Reason<'env> {
    /// `signal.reason` (or what reading it threw).
    pub(crate) value: Unknown<'env>,
    /// `Timeout` for a `TimeoutError` (`AbortSignal.timeout(ms)`), otherwise a custom reason
    /// carrying the reason's `message`, or its text (`String(reason)`).
    pub(crate) cancel: CancelReason,
}

/// Reads `signal`'s reason; `None` only if Node-API itself failed.
pub(crate) fn inspect<'env>(env: &'env Env, signal: &Object<'_>) -> Option<Reason<'env>> {
    let helpers = helpers(env).ok()?;
    let inspect: Function<'_, FnArgs<(Object<'_>,)>, Object<'_>> =
        helpers.get_named_property("inspect").ok()?;
    let found = inspect.call(FnArgs::from((*signal,))).ok()?;
    let value: Unknown<'_> = found.get_element(0).ok()?;
    let timeout: bool = found.get_element(1).ok()?;
    let text: String = found.get_element(2).ok()?;
    Some(Reason {
        value: value.into_unknown(env).ok()?,
        cancel: if timeout {
            CancelReason::Timeout
        } else {
            CancelReason::custom(text)
        },
    })
}

/// `signal.removeEventListener("abort", listener)`, whatever the signal throws.
pub(crate) fn unlisten(env: &Env, signal: &Object<'_>, listener: &Function<'_, (), ()>) {
    let Ok(helpers) = helpers(env) else {
        return;
    };
    let unlisten: napi::Result<Function<'_, FnArgs<(Object<'_>, Unknown<'_>)>, Unknown<'_>>> =
        helpers.get_named_property("unlisten");
    if let Ok(unlisten) = unlisten {
        let _ = unlisten.call(FnArgs::from((*signal, listener.to_unknown())));
    }
}

/// What a promise rejects with when its job was cancelled by something other than its signal
/// (a parent token, a scope): a `DOMException` named
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
