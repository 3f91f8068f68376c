//! [`spawn_native`] and [`spawn_native_with`]: a job on the addon's pool, its promise, and the
//! `{ signal }` that cancels it.

use napi::Env;
use napi::bindgen_prelude::{PromiseRaw, Unknown};
use tethered::{CancelToken, JobOptions, Placement};

use crate::job;
use crate::output::{self, IntoJsResult};

/// The options object a JavaScript caller passes last, as every Node and web API takes its
/// signal: `{ signal?: AbortSignal }`. Take it as `Option<CallOptions<'env>>` in a `#[napi]`
/// function and hand it to [`spawn_native`]; napi-rs's type generation writes it as
/// `options?: CallOptions`, which the crate's TypeScript declarations
/// ([`TYPESCRIPT`](crate::TYPESCRIPT)) define.
///
/// It arrives unchecked (any JavaScript value): [`spawn_native`] checks it, and a value that is
/// not an object, or a `signal` that is no `AbortSignal`, rejects the promise with a
/// `TypeError` (`code: 'ERR_INVALID_ARG_TYPE'`) that names the option, as `fetch` and
/// `timers/promises` do.
pub type CallOptions<'env> = Unknown<'env>;

/// Runs `f` on the addon's pool and returns a promise of its value; the call's
/// `{ signal }` cancels the job's token, and the promise rejects at once with an `AbortError`
/// whose `cause` is `signal.reason`. It is [`spawn_native_with`] with `JobOptions::new()`.
///
/// - `f` gets the job's [`CancelToken`]: `token.is_cancelled()` is one atomic load, so a loop
///   can check it every step and return when it reads `true`.
/// - `controller.abort(reason)` cancels the token with [`CancelReason::Dropped`] (the caller
///   gave up) and the reason's `message` (or its text) as the token's cause;
///   `AbortSignal.timeout(ms)` with [`CancelReason::Timeout`]. `AbortSignal.any([...])` works
///   as the signal it makes.
/// - A signal aborted already rejects the promise, and `f` never runs.
/// - One signal can serve any number of jobs: they share one `abort` listener (added with
///   `addEventListener`, never `onabort`), which the last of them to settle removes.
/// - `f`'s value resolves the promise; an `Err` (see [`IntoJsResult`]) rejects it with that
///   error, a panic with an `Error` whose `code` is `ERR_NATIVE_PANIC`, never an abort of the
///   process. The rejections are listed in the crate's docs.
///
/// [`CancelReason::Dropped`]: tethered::CancelReason::Dropped
/// [`CancelReason::Timeout`]: tethered::CancelReason::Timeout
///
/// ```
/// use napi::Env;
/// use napi::bindgen_prelude::PromiseRaw;
/// use tethered_napi::CallOptions;
///
/// /// `count(limit, { signal })`: counts to `limit`, or until `signal` aborts it.
/// fn count<'env>(
///     env: &'env Env,
///     limit: u32,
///     options: Option<CallOptions<'env>>,
/// ) -> napi::Result<PromiseRaw<'env, u32>> {
///     tethered_napi::spawn_native(env, options, move |token| {
///         let mut n = 0;
///         while n < limit && !token.is_cancelled() {
///             n += 1; // one step of real work
///         }
///         n
///     })
/// }
/// ```
///
/// With `#[napi]`, the function is exported as is:
///
/// ```ignore
/// #[napi(ts_return_type = "Promise<number>")]
/// pub fn count<'env>(env: &'env Env, limit: u32, options: Option<CallOptions<'env>>)
///     -> napi::Result<PromiseRaw<'env, u32>> { /* as above */ }
/// ```
///
/// # Errors
///
/// Only a Node-API failure as napi-rs reports it; everything else (bad options, an aborted
/// signal, a job that cannot start, a closing environment) rejects the promise instead.
pub fn spawn_native<'env, F, R, M>(
    env: &'env Env,
    options: Option<CallOptions<'env>>,
    f: F,
) -> napi::Result<PromiseRaw<'env, R::Value>>
where
    F: FnOnce(CancelToken) -> R + Send + 'static,
    R: IntoJsResult<M>,
{
    spawn_native_with(env, options, JobOptions::new(), f)
}

/// [`spawn_native`] with [`JobOptions`]: every option is honoured.
///
/// - `grace`: once the job is cancelled (its signal, a deadline, a parent), the promise waits
///   at most this long for `f` to return, then rejects; if `f` returned, the rejection's
///   `returned` is its value. Unset, it is zero here: the promise rejects as the signal aborts,
///   as `fetch` does, and `f` returns by itself, counted in
///   [`stats()`](tethered::stats)`.detached` until then. `Duration::MAX` waits for `f`.
/// - `timeout` or `deadline`: cancels the job with `Timeout`; the promise rejects with an
///   `AbortError` whose `cause` is a `TimeoutError` `DOMException` (as `AbortSignal.timeout`'s).
/// - `child_of`: a parent's cancel stops the job with the parent's reason and cause.
/// - `name`, `panic`, and the placement: `on` a [`Spawner`](tethered::Spawner), `in_scope` a
///   [`NativeScope`](tethered::NativeScope); unplaced, the addon's pool (as many threads as
///   the machine runs at once).
///
/// # Errors
///
/// As [`spawn_native`].
///
/// ```
/// use std::time::Duration;
/// use napi::Env;
/// use napi::bindgen_prelude::PromiseRaw;
/// use tethered_napi::{CallOptions, JobOptions};
///
/// /// `flush(blocks, { signal })`: at most 5 s; an aborted flush settles only once the
/// /// writer stopped (at most 1 s after the abort).
/// fn flush<'env>(
///     env: &'env Env,
///     blocks: u32,
///     options: Option<CallOptions<'env>>,
/// ) -> napi::Result<PromiseRaw<'env, u32>> {
///     let job = JobOptions::new()
///         .name("flush")
///         .timeout(Duration::from_secs(5))
///         .grace(Duration::from_secs(1));
///     tethered_napi::spawn_native_with(env, options, job, move |token| {
///         let mut written = 0;
///         while written < blocks && !token.is_cancelled() {
///             written += 1; // write one block
///         }
///         written
///     })
/// }
/// ```
pub fn spawn_native_with<'env, P, F, R, M>(
    env: &'env Env,
    options: Option<CallOptions<'env>>,
    job: JobOptions<P>,
    f: F,
) -> napi::Result<PromiseRaw<'env, R::Value>>
where
    P: Placement,
    F: FnOnce(CancelToken) -> R + Send + 'static,
    R: IntoJsResult<M>,
{
    job::start(
        env,
        options,
        job,
        Box::new(move |token: CancelToken| output::convert(f(token).into_js_result())),
    )
}
