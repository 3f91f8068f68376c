//! What a promise rejects with, made on the JavaScript thread as Node's own APIs make theirs.
//!
//! | What happened | The rejection |
//! | --- | --- |
//! | the call's signal aborted (before the call, or while the job ran) | an `AbortError` (`name: 'AbortError'`, `code: 'ABORT_ERR'`) whose `cause` is `signal.reason`, as `timers/promises` and `events.once` reject |
//! | any other cancel: the job's own timeout, a parent token, a scope, the environment's teardown | an `AbortError` whose `cause` is a `DOMException` named `TimeoutError` for a deadline, an `Error` with the cancel's cause otherwise |
//! | the closure panicked, or converting its value did | an `Error` with `code: 'ERR_NATIVE_PANIC'` |
//! | the job could not start (no thread, a closed scope or spawner) | an `Error` with `code: 'ERR_NATIVE_SPAWN'` |
//! | the environment is shutting down | an `Error` with `code: 'ERR_NATIVE_CLOSING'` |
//! | the options are not an object, `options.signal` is no `AbortSignal` | a `TypeError` with `code: 'ERR_INVALID_ARG_TYPE'` naming the option |
//! | the closure returned an `Err` | that error, as napi-rs makes it |
//!
//! Every `AbortError` carries `reason`, the job's [`CancelReason`] as text (`'Dropped'`,
//! `'Timeout'`, `'Shutdown'`...), and `returned`, the closure's value when the promise waited
//! for it (a grace) and it returned one.

use napi::bindgen_prelude::{ToNapiValue, Unknown};
use napi::{Env, Error, Status};
use tethered::{CancelReason, JobPanic, NativeError, SpawnError};

use crate::helpers;
use crate::output::Convert;

/// The text of a reason in JavaScript: the variant's name.
pub(crate) fn reason_name(reason: CancelReason) -> String {
    format!("{reason:?}")
}

/// The rejection of a job whose signal aborted: an `AbortError` whose `cause` is the signal's
/// reason. `err` is the job's stop, if it ran.
pub(crate) fn signal_abort<T>(
    env: &Env,
    reason: &Unknown<'_>,
    err: Option<&NativeError<T>>,
) -> Error {
    let kind = err
        .and_then(NativeError::cancel_reason)
        .unwrap_or(CancelReason::Dropped);
    abort_error(env, "The operation was aborted", Some(*reason), kind)
}

/// The rejection of a job stopped by anything but its signal.
pub(crate) fn stopped<T>(env: &Env, err: &NativeError<T>) -> Error {
    let Some(reason) = err.cancel_reason() else {
        return native_error(env, &err.to_string(), "ERR_NATIVE_FAILED", None);
    };
    let message = format!("The native job was stopped: {reason}");
    let cause = if reason == CancelReason::Timeout {
        helpers::call::<_, Unknown<'_>>(env, "timeoutCause", (message.as_str(),)).ok()
    } else {
        err.cause().and_then(|cause| {
            ToNapiValue::into_unknown(Error::from_reason(cause.to_string()), env).ok()
        })
    };
    abort_error(env, &message, cause, reason)
}

fn abort_error(
    env: &Env,
    message: &str,
    cause: Option<Unknown<'_>>,
    reason: CancelReason,
) -> Error {
    let has_cause = cause.is_some();
    let cause = match cause {
        Some(cause) => cause,
        None => match ToNapiValue::into_unknown((), env) {
            Ok(undefined) => undefined,
            Err(err) => return err,
        },
    };
    let made: napi::Result<Unknown<'_>> = helpers::call(
        env,
        "abortError",
        (message, cause, has_cause, reason_name(reason).as_str()),
    );
    match made {
        Ok(value) => Error::from_unknown_without_coercion(value),
        Err(_) => Error::new(Status::Cancelled, message.to_owned()),
    }
}

/// `rejection` with `returned` set to the closure's value, converted (left out if the
/// conversion fails).
pub(crate) fn with_returned(env: &Env, rejection: Error, convert: Convert) -> Error {
    let Ok(Ok(value)) = tethered::__private::catch_panic(|| convert(env)) else {
        return rejection;
    };
    let Ok(error) = ToNapiValue::into_unknown(rejection, env) else {
        return Error::from_reason("the rejection could not be made");
    };
    match helpers::call::<_, Unknown<'_>>(env, "withReturned", (error, value)) {
        Ok(value) => Error::from_unknown_without_coercion(value),
        Err(err) => err,
    }
}

/// An `Error` with a stable `code`.
pub(crate) fn native_error(
    env: &Env,
    message: &str,
    code: &str,
    reason: Option<CancelReason>,
) -> Error {
    let reason = reason.map(reason_name);
    let made: napi::Result<Unknown<'_>> =
        helpers::call(env, "nativeError", (message, code, reason.as_deref()));
    match made {
        Ok(value) => Error::from_unknown_without_coercion(value),
        Err(_) => Error::new(Status::GenericFailure, format!("{code}: {message}")),
    }
}

/// The rejection of a closure (or of the conversion of its value: `what` says which) that
/// panicked.
pub(crate) fn panicked(env: &Env, what: &str, panic: &JobPanic) -> Error {
    let message = format!(
        "{what} panicked: {}",
        panic
            .message()
            .unwrap_or("(a payload that is not a string)")
    );
    native_error(env, &message, "ERR_NATIVE_PANIC", None)
}

/// The rejection of a job that did not start.
pub(crate) fn spawn_refused(env: &Env, err: &SpawnError) -> Error {
    native_error(
        env,
        &format!("the native job did not start: {err}"),
        "ERR_NATIVE_SPAWN",
        None,
    )
}

/// The rejection of a call made while the environment shuts down.
pub(crate) fn closing(env: &Env) -> Error {
    native_error(
        env,
        "the JavaScript environment is shutting down (the process is exiting or the Worker is \
         terminating): no native job starts now",
        "ERR_NATIVE_CLOSING",
        None,
    )
}
