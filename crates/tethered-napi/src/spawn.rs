//! [`spawn_native`] and [`spawn_native_joined`]: a job on a thread of its own, its promise, and
//! the signal that cancels it.

use napi::Env;
use napi::bindgen_prelude::{Object, PromiseRaw};
use tethered::CancelToken;

use crate::builder::Builder;
use crate::output::IntoJsResult;

/// Runs `f` on a native thread of its own and returns a promise of its value; `signal` (a
/// JavaScript `AbortSignal`, or `None`) cancels the job's token, and the promise rejects at
/// once with `signal.reason`, as `fetch` does.
///
/// - `f` gets the job's [`CancelToken`]: `token.is_cancelled()` is one atomic load, so a loop
///   can check it every step and return when it reads `true`.
/// - `controller.abort(reason)` cancels the token with a custom reason carrying the reason's
///   `message` (or its text); `AbortSignal.timeout(ms)` with [`CancelReason::Timeout`](tethered::CancelReason::Timeout).
///   `AbortSignal.any([...])` works as the signal it makes.
/// - A signal aborted already rejects the promise with its reason, and `f` never runs.
/// - One signal can serve any number of jobs: they share one `abort` listener (added with
///   `addEventListener`, never `onabort`), which the last of them to settle removes.
/// - Any other cancel (a [`Builder::child_of`] parent, a scope) rejects the promise at once
///   too, with a `DOMException` named `AbortError` (or `TimeoutError` for a timeout) whose
///   message names the reason. The environment's teardown cancels the job with `Shutdown` and
///   settles nothing (nothing is left to see the promise).
/// - `f`'s value resolves the promise; an `Err` (see [`IntoJsResult`]) rejects it with an
///   `Error`, and a panic with an `Error` whose message is the panic's, never an abort of the
///   process.
///
/// [`spawn_native_joined`] waits for `f` to return before rejecting.
///
/// ```
/// use napi::Env;
/// use napi::bindgen_prelude::{Object, PromiseRaw};
///
/// /// `count(limit, signal?)`: counts to `limit`, or until `signal` aborts it.
/// fn count<'env>(
///     env: &'env Env,
///     limit: u32,
///     signal: Option<Object<'env>>,
/// ) -> napi::Result<PromiseRaw<'env, u32>> {
///     tethered_napi::spawn_native(env, signal, move |token| {
///         let mut n = 0;
///         while n < limit && !token.is_cancelled() {
///             n += 1; // one step of real work
///         }
///         n
///     })
/// }
/// ```
///
/// With `#[napi]`, take the signal as `Option<Object>` (never napi-rs's `AbortSignal`, whose
/// conversion overwrites the signal's `onabort`) and return the promise:
///
/// ```ignore
/// #[napi(ts_return_type = "Promise<number>")]
/// pub fn count<'env>(env: &'env Env, limit: u32, signal: Option<Object<'env>>)
///     -> napi::Result<PromiseRaw<'env, u32>> { /* as above */ }
/// ```
///
/// # Errors
///
/// An `InvalidArg` error (thrown as an `Error`) when `signal` is no `AbortSignal`; a `Closing`
/// error when the environment is shutting down; a Node-API failure as napi-rs reports it.
/// A job that cannot start (no thread) rejects the promise instead.
pub fn spawn_native<'env, F, R, M>(
    env: &'env Env,
    signal: Option<Object<'env>>,
    f: F,
) -> napi::Result<PromiseRaw<'env, R::Value>>
where
    F: FnOnce(CancelToken) -> R + Send + 'static,
    R: IntoJsResult<M>,
{
    Builder::new().spawn(env, signal, f)
}

/// [`spawn_native`], but the promise settles only once `f` has returned: after a cancel, it
/// rejects (with `signal.reason`, or the `AbortError` of another cancel) when the closure is
/// done, so `await` means the native work has stopped. A signal aborted already rejects at
/// once, as `f` never runs.
///
/// ```
/// use napi::Env;
/// use napi::bindgen_prelude::{Object, PromiseRaw};
///
/// /// `flush(signal?)`: resolves or rejects only once the native writer has stopped.
/// fn flush<'env>(env: &'env Env, signal: Option<Object<'env>>) -> napi::Result<PromiseRaw<'env, ()>> {
///     tethered_napi::spawn_native_joined(env, signal, move |token| {
///         while !token.is_cancelled() {
///             // write one block; return when done
///             break;
///         }
///     })
/// }
/// ```
///
/// # Errors
///
/// As [`spawn_native`].
pub fn spawn_native_joined<'env, F, R, M>(
    env: &'env Env,
    signal: Option<Object<'env>>,
    f: F,
) -> napi::Result<PromiseRaw<'env, R::Value>>
where
    F: FnOnce(CancelToken) -> R + Send + 'static,
    R: IntoJsResult<M>,
{
    Builder::new().spawn_joined(env, signal, f)
}
