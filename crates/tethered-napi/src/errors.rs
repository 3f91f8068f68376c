//! What a promise settles with, decided in Rust and described as a [`Settlement`]; `promise.rs`
//! makes it in JavaScript, as Node's own APIs make theirs, in one call.
//!
//! | What happened | The rejection |
//! | --- | --- |
//! | the call's signal aborted (before the call, or while the job ran) | an `AbortError` (`name: 'AbortError'`, `code: 'ABORT_ERR'`) whose `cause` is `signal.reason`, as `timers/promises` and `events.once` reject |
//! | any other cancel: the job's own timeout, a parent token, a scope, the environment's teardown | an `AbortError` whose `cause` is a `DOMException` named `TimeoutError` for a deadline, an `Error` with the cancel's cause otherwise |
//! | the closure returned an `Err` | that error, as napi-rs makes it: an `Error` whose `message` is the error's reason and whose `code` is its napi status (`'GenericFailure'`, `'InvalidArg'`...) |
//! | the closure panicked, or converting its value did | an `Error` with `code: 'ERR_NATIVE_PANIC'` |
//! | the job could not start (no thread, a closed scope or spawner) | an `Error` with `code: 'ERR_NATIVE_SPAWN'` |
//! | the environment is shutting down | an `Error` with `code: 'ERR_NATIVE_CLOSING'` |
//! | the options are not an object, `options.signal` is no `AbortSignal` | a `TypeError` with `code: 'ERR_INVALID_ARG_TYPE'` naming the option (made by the helpers' `begin`) |
//!
//! Every `AbortError` carries `reason`, the job's [`CancelReason`] as text (`'Dropped'`,
//! `'Timeout'`, `'Shutdown'`...), and `returned`, the closure's value when the promise waited
//! for it (a grace) and it returned one.

use napi::Env;
use napi::bindgen_prelude::{ToNapiValue, Unknown};
use tethered::{CancelReason, Cause, JobPanic, NativeError, SpawnError};

use crate::output::Convert;
use crate::panics;

/// A job's outcome, as its handle resolved.
pub(crate) type Outcome = Result<Convert, NativeError<Convert>>;

/// What a job's promise settles with.
pub(crate) enum Settlement<'env> {
    /// Fulfilled with the closure's value.
    Resolve(Unknown<'env>),
    /// Rejected with this value: the closure's own error, as napi-rs makes it.
    Reject(Unknown<'env>),
    /// Rejected with an `AbortError`.
    Abort {
        message: String,
        reason: CancelReason,
        cause: AbortCause,
        /// What the closure returned, converted, when the promise waited for it.
        returned: Option<Unknown<'env>>,
    },
    /// Rejected with an `Error` whose `code` is one of the crate's.
    Coded { message: String, code: &'static str },
}

/// An `AbortError`'s `cause`.
pub(crate) enum AbortCause {
    /// The job's signal's `reason` (kept by the helpers with the signal's entry).
    Signal,
    /// A `DOMException` named `TimeoutError`, with the error's message.
    Timeout,
    /// An `Error` with this text: the cancel's cause.
    Text(String),
    /// None.
    None,
}

/// The text of a reason in JavaScript: the variant's name.
pub(crate) fn reason_name(reason: CancelReason) -> String {
    format!("{reason:?}")
}

/// What the promise of a job whose handle resolved to `outcome` settles with.
/// `signal_cause` is the cause the signal's abort cancelled the job with, if that cancel
/// decided the job's reason.
pub(crate) fn settlement<'env>(
    env: &'env Env,
    outcome: Outcome,
    signal_cause: Option<&Cause>,
) -> Settlement<'env> {
    match outcome {
        Ok(convert) => match panics::catch(|| convert(env)) {
            Ok(Ok(value)) => Settlement::Resolve(value),
            Ok(Err(err)) => thrown(env, err),
            Err(panic) => panicked("converting the native job's value to JavaScript", &panic),
        },
        Err(NativeError::Panicked(panic)) => {
            let settlement = panicked("the native job", &panic);
            tethered::__private::drop_contained(panic);
            settlement
        }
        Err(err) => {
            let by_signal = matches!((err.cause(), signal_cause), (Some(seen), Some(sent)) if seen.ptr_eq(sent));
            let (message, cause) = if by_signal {
                ("The operation was aborted".to_owned(), AbortCause::Signal)
            } else {
                stopped(&err)
            };
            let reason = err.cancel_reason().unwrap_or(CancelReason::Requested);
            let returned = match err {
                NativeError::Cancelled {
                    returned: Some(convert),
                    ..
                } => match panics::catch(|| convert(env)) {
                    Ok(Ok(value)) => Some(value),
                    // A value that cannot become JavaScript is left out of the rejection.
                    _ => None,
                },
                other => {
                    tethered::__private::drop_contained(other);
                    None
                }
            };
            Settlement::Abort {
                message,
                reason,
                cause,
                returned,
            }
        }
    }
}

/// The rejection of a job whose signal fired before the job existed (while its listener was
/// being added): nothing started.
pub(crate) fn aborted_before_start<'env>(kind: CancelReason) -> Settlement<'env> {
    Settlement::Abort {
        message: "The operation was aborted".to_owned(),
        reason: kind,
        cause: AbortCause::Signal,
        returned: None,
    }
}

/// The message and cause of a job stopped by anything but its signal (a cancelled or
/// abandoned job: both carry a reason).
fn stopped<T>(err: &NativeError<T>) -> (String, AbortCause) {
    let reason = err.cancel_reason().unwrap_or(CancelReason::Requested);
    let message = format!("The native job was stopped: {reason}");
    let cause = if reason == CancelReason::Timeout {
        AbortCause::Timeout
    } else {
        match err.cause() {
            Some(cause) => AbortCause::Text(cause.to_string()),
            None => AbortCause::None,
        }
    };
    (message, cause)
}

/// The closure's own error, as napi-rs makes it (its JavaScript value, if it came from one).
fn thrown<'env>(env: &'env Env, err: napi::Error) -> Settlement<'env> {
    match ToNapiValue::into_unknown(err, env) {
        Ok(value) => Settlement::Reject(value),
        Err(err) => unmade(&err),
    }
}

/// The rejection of a closure (or of the conversion of its value: `what` says which) that
/// panicked.
fn panicked<'env>(what: &str, panic: &JobPanic) -> Settlement<'env> {
    Settlement::Coded {
        message: format!(
            "{what} panicked: {}",
            panic
                .message()
                .unwrap_or("(a payload that is not a string)")
        ),
        code: "ERR_NATIVE_PANIC",
    }
}

/// The rejection of a job that did not start.
pub(crate) fn spawn_refused<'env>(err: &SpawnError) -> Settlement<'env> {
    Settlement::Coded {
        message: format!(
            "the native job did not start: {}",
            tethered::__private::error_chain(err)
        ),
        code: "ERR_NATIVE_SPAWN",
    }
}

/// The rejection of a job whose outcome Node-API could not make into JavaScript values.
pub(crate) fn unmade<'env>(err: &napi::Error) -> Settlement<'env> {
    Settlement::Coded {
        message: format!("the native job's outcome could not be made in JavaScript: {err}"),
        code: "ERR_NATIVE_PANIC",
    }
}

/// The rejection of a call made while the environment shuts down.
pub(crate) fn closing<'env>() -> Settlement<'env> {
    Settlement::Coded {
        message: "the JavaScript environment is shutting down (the process is exiting or the \
                  Worker is terminating): no native job starts now"
            .to_owned(),
        code: "ERR_NATIVE_CLOSING",
    }
}
