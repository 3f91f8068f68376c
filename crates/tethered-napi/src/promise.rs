//! A job's promise: a JavaScript promise whose resolving functions the environment's helpers
//! keep by the job's number, settled on the JavaScript thread by calling them. Being a plain
//! JavaScript promise, it can be settled within the call that aborts its signal, as `fetch`'s
//! is, where napi-rs's deferred settles a turn of the event loop later.
//!
//! While any promise of an environment is pending, the environment keeps its event loop alive
//! (`environment.rs`), as a pending `fetch` or timer does.

use napi::bindgen_prelude::{Object, PromiseRaw, ToNapiValue, Unknown};
use napi::{Env, Error, JsValue};

use crate::environment;
use crate::helpers;

/// Settles one pending promise; made with it by [`pending`].
#[derive(Debug)]
pub(crate) struct Settle {
    id: u64,
}

impl Settle {
    /// Fulfils the promise with `value` (JavaScript thread).
    pub(crate) fn resolve(&self, env: &Env, value: Unknown<'_>) {
        self.settle(env, true, value);
    }

    /// Rejects the promise with `err`'s JavaScript value (JavaScript thread).
    pub(crate) fn reject(&self, env: &Env, err: Error) {
        let value = match ToNapiValue::into_unknown(err, env) {
            Ok(value) => value,
            Err(err) => {
                match ToNapiValue::into_unknown(
                    Error::from_reason(format!("the job failed: {err}")),
                    env,
                ) {
                    Ok(value) => value,
                    Err(_) => return,
                }
            }
        };
        self.settle(env, false, value);
    }

    /// Whether the promise has settled (JavaScript thread).
    pub(crate) fn is_settled(&self, env: &Env) -> bool {
        let pending: napi::Result<bool> = helpers::call(env, "isPending", (self.id as f64,));
        !pending.unwrap_or(false)
    }

    fn settle(&self, env: &Env, fulfilled: bool, value: Unknown<'_>) {
        let settled: napi::Result<bool> =
            helpers::call(env, "settle", (self.id as f64, fulfilled, value));
        if settled.unwrap_or(false) {
            environment::settled(env);
        }
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

/// A promise rejected with `err`: how a call that cannot start fails.
pub(crate) fn rejected<'env, T>(env: &'env Env, err: Error) -> napi::Result<PromiseRaw<'env, T>> {
    let value = ToNapiValue::into_unknown(err, env)?;
    let promise: Object<'env> = helpers::call(env, "rejected", (value,))?;
    Ok(PromiseRaw::new(env.raw(), promise.raw()))
}
