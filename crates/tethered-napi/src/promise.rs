//! A job's promise: a JavaScript promise whose resolving functions the environment's helpers
//! keep by the job's number, settled on the JavaScript thread by one call to the helpers,
//! which also builds what it settles with (a [`Settlement`]) and takes the job off its
//! signal's listener. Being a plain JavaScript promise, it can be settled within the call that
//! aborts its signal, as `fetch`'s is, where napi-rs's deferred settles a turn of the event
//! loop later.
//!
//! While any promise of an environment is pending, the environment keeps its event loop alive
//! (`environment.rs`), as a pending `fetch` or timer does.

use napi::bindgen_prelude::{Array, Object, PromiseRaw, ToNapiValue, Unknown};
use napi::{Env, JsValue};

use crate::environment;
use crate::errors::{self, AbortCause, Settlement};
use crate::helpers;

/// Settles one pending promise; made with it by [`pending`].
#[derive(Debug)]
pub(crate) struct Settle {
    id: u64,
}

impl Settle {
    /// Settles the promise with `settlement` (JavaScript thread), and takes the job off its
    /// signal's listener.
    pub(crate) fn settle(&self, env: &Env, settlement: Settlement<'_>) {
        let args = match Args::of(env, settlement) {
            Ok(args) => args,
            // Node-API refused to make a value of it: the promise still settles.
            Err(err) => match Args::of(env, errors::unmade(&err)) {
                Ok(args) => args,
                Err(_) => return,
            },
        };
        let settled: napi::Result<bool> = helpers::call(
            env,
            "settle",
            (
                self.id as f64,
                args.how,
                args.value,
                args.text,
                args.name,
                args.cause,
                args.returned,
            ),
        );
        if settled.unwrap_or(false) {
            environment::settled(env);
        }
    }

    /// Whether the promise has settled (JavaScript thread).
    pub(crate) fn is_settled(&self, env: &Env) -> bool {
        let pending: napi::Result<bool> = helpers::call(env, "isPending", (self.id as f64,));
        !pending.unwrap_or(false)
    }
}

/// A pending promise for job `id`, and what settles it.
pub(crate) fn pending<'env, T>(
    env: &'env Env,
    id: u64,
) -> napi::Result<(PromiseRaw<'env, T>, Settle)> {
    let promise: Object<'env> = helpers::call(env, "promise", (id as f64,))?;
    environment::pending(env)?;
    Ok((PromiseRaw::new(env.raw(), promise.raw()), Settle { id }))
}

/// A promise rejected with `settlement`: how a call that cannot start fails.
pub(crate) fn rejected<'env, T>(
    env: &'env Env,
    settlement: Settlement<'_>,
) -> napi::Result<PromiseRaw<'env, T>> {
    let args = Args::of(env, settlement)?;
    let promise: Object<'env> = helpers::call(
        env,
        "rejected",
        (args.how, args.value, args.text, args.name),
    )?;
    Ok(PromiseRaw::new(env.raw(), promise.raw()))
}

/// A [`Settlement`] as the helpers' `settle` takes it.
struct Args<'env> {
    how: &'static str,
    value: Unknown<'env>,
    text: String,
    name: String,
    cause: Option<String>,
    /// `[value]`, so that a value of `undefined` is still told from none.
    returned: Option<Array<'env>>,
}

impl<'env> Args<'env> {
    fn of(env: &'env Env, settlement: Settlement<'env>) -> napi::Result<Args<'env>> {
        let undefined = || ToNapiValue::into_unknown((), env);
        Ok(match settlement {
            Settlement::Resolve(value) => Args::plain("resolve", value),
            Settlement::Reject(value) => Args::plain("reject", value),
            Settlement::Coded { message, code } => Args {
                how: "coded",
                value: undefined()?,
                text: message,
                name: code.to_owned(),
                cause: None,
                returned: None,
            },
            Settlement::Abort {
                message,
                reason,
                cause,
                returned,
            } => {
                let (how, cause) = match cause {
                    AbortCause::Signal => ("abort-signal", None),
                    AbortCause::Timeout => ("abort-timeout", None),
                    AbortCause::Text(text) => ("abort-text", Some(text)),
                    AbortCause::None => ("abort", None),
                };
                let returned = match returned {
                    Some(value) => {
                        let mut boxed = env.create_array(1)?;
                        boxed.set(0, value)?;
                        Some(boxed)
                    }
                    None => None,
                };
                Args {
                    how,
                    value: undefined()?,
                    text: message,
                    name: errors::reason_name(reason),
                    cause,
                    returned,
                }
            }
        })
    }

    fn plain(how: &'static str, value: Unknown<'env>) -> Args<'env> {
        Args {
            how,
            value,
            text: String::new(),
            name: String::new(),
            cause: None,
            returned: None,
        }
    }
}
