//! A JavaScript `AbortSignal` reaches the native work a Node.js addon runs: a napi-rs function
//! runs its work on a native thread with a [`CancelToken`], and aborting the signal cancels the
//! token.
//!
//! napi-rs's `AsyncTask::with_signal` only cancels work that has not started: once `compute`
//! runs, `abort()` changes nothing and a libuv thread burns on until the work is done. A
//! server that aborts a request's work when its client disconnects, or with
//! `AbortSignal.timeout(ms)`, leaks a thread per abort. [`spawn_native`] returns a promise
//! instead, tied to the job: the `{ signal }` of the call cancels the job's token, which the
//! native loop checks with one atomic load, and the promise rejects with an `AbortError`
//! within the `abort()` call, as `fetch`'s does.
//!
//! ```
//! use napi::Env;
//! use napi::bindgen_prelude::PromiseRaw;
//! use tethered_napi::CallOptions;
//!
//! /// `run(script, { signal })`: interprets `script` on a native thread; aborting `signal`
//! /// stops the interpreter within 1,000 steps.
//! fn run<'env>(
//!     env: &'env Env,
//!     script: String,
//!     options: Option<CallOptions<'env>>,
//! ) -> napi::Result<PromiseRaw<'env, u32>> {
//!     tethered_napi::spawn_native(env, options, move |token| {
//!         let mut steps = 0u32;
//!         // At most 100 million steps, and no more once the token is cancelled.
//!         for _op in script.bytes().cycle().take(100_000_000) {
//!             steps += 1; // one step of the interpreter
//!             if steps % 1_000 == 0 && token.is_cancelled() {
//!                 break;
//!             }
//!         }
//!         steps
//!     })
//! }
//! ```
//!
//! Exported with `#[napi]` (see the example addon in the repository's `examples/node`), from
//! JavaScript:
//!
//! ```js
//! const signal = AbortSignal.timeout(2000);   // or a controller's, or AbortSignal.any([...])
//! try {
//!   const steps = await addon.run(script, { signal });
//! } catch (err) {
//!   // err.name === 'AbortError', err.code === 'ABORT_ERR', err.cause === signal.reason,
//!   // err.reason === 'Timeout'; the interpreter has stopped
//! }
//! ```
//!
//! No Rust async runtime is involved: the job runs on the addon's pool (as many threads as the
//! machine runs at once) unless its [`JobOptions`] place it elsewhere, and its outcome reaches
//! JavaScript through one threadsafe function per environment.
//!
//! # What cancels a job, and what the promise does
//!
//! The same event reads the same [`CancelReason`] in every crate of the family; the
//! JavaScript reason is kept as the token's cause (its `message`, or its text).
//!
//! | On the JavaScript side | The job's token | The promise |
//! | --- | --- | --- |
//! | `controller.abort()`, `controller.abort(reason)` | [`Dropped`](CancelReason::Dropped) (cause: the reason's `message`, a plain object's JSON, or its text) | rejects within `abort()` with an `AbortError` whose `cause` is `signal.reason` |
//! | `AbortSignal.timeout(ms)` firing | [`Timeout`](CancelReason::Timeout) | the same (`cause`: the `TimeoutError`) |
//! | `AbortSignal.any([...])` | as the signal that fired | the same |
//! | a signal aborted before the call | (the closure never runs) | rejects with an `AbortError` whose `cause` is `signal.reason` |
//! | the options' `timeout` or `deadline` | `Timeout` | rejects with an `AbortError` whose `cause` is a `TimeoutError` `DOMException` |
//! | a parent token (`child_of`), a [`NativeScope`] | theirs | rejects with an `AbortError` naming the reason, its cause the cancel's |
//! | the environment's teardown: a `Worker` terminated, `process.exit()` | [`Shutdown`](CancelReason::Shutdown) | nothing settles any more |
//!
//! Every `AbortError` also carries `reason` (`'Dropped'`, `'Timeout'`...) and, when the promise
//! waited for the closure (a [`grace`](JobOptions::grace)), `returned`: what the closure
//! returned. Other failures have stable `code`s: `ERR_NATIVE_PANIC` (the closure, or the
//! conversion of its value, panicked), `ERR_NATIVE_SPAWN` (the job could not start),
//! `ERR_NATIVE_CLOSING` (the environment shuts down), `ERR_INVALID_ARG_TYPE` (a `TypeError`:
//! the options are not an object, or `options.signal` is no `AbortSignal`). An `Err` the
//! closure returns rejects with that error as napi-rs makes it: its `message` is the error's
//! reason and its `code` the napi status it carries (`Error::new(Status::InvalidArg, ..)`:
//! `'InvalidArg'`; `Error::from_reason(..)`: `'GenericFailure'`). [`TYPESCRIPT`] types each.
//!
//! A panic the crate catches (a closure's, or its value's conversion) rejects the promise and
//! is not printed: the panic hook the crate installs stays quiet for it, and hands every other
//! panic to the hook it replaced. `TETHERED_NAPI_PRINT_PANICS=1` prints them too; a job with
//! [`PanicPolicy::Abort`] always prints before the process ends.
//!
//! # Where jobs run
//!
//! Unplaced, on the addon's pool: as many threads as `std::thread::available_parallelism`,
//! shared by every environment, first in first out. A burst of busy jobs then never outnumbers
//! the cores and starves the event loop's thread, and libuv's 4 threads (which `fs`,
//! `dns.lookup`, `crypto` and `zlib` share) stay free. A queued job whose signal aborts never
//! starts: jobs that share a signal are cancelled the newest first, so no queued one takes the
//! place of a running one that stopped. Work that blocks (a sleep, a socket) belongs on a
//! spawner of its own: `JobOptions::new().on(ThreadSpawner::new())`, or `in_scope` a
//! [`NativeScope`] that bounds it.
//!
//! # When the environment goes away
//!
//! The first job of an environment (the main thread's, or a `worker_threads` Worker's)
//! registers a Node-API cleanup hook and a listener on `process`'s `exit` event (the
//! `process.exit()` path runs no cleanup hook). Either one cancels every job of the
//! environment with [`CancelReason::Shutdown`] and waits up to 100 ms for the closures running
//! to return, so that closures that check their token finish before the thread or the process
//! goes. After that, no job starts in that environment. A closure that ignores its token keeps
//! its thread (counted in [`tethered::stats()`]`.running` until it returns), and what it
//! returns never reaches a torn-down environment.
//!
//! A pending promise keeps its environment's event loop alive, as a pending `fetch` does; a
//! closure whose promise settled already (its signal aborted) does not.
//!
//! # TypeScript
//!
//! napi-rs's type generation writes a `CallOptions` argument as `options?: CallOptions`;
//! [`TYPESCRIPT`] declares it, with the errors' shapes. Prepend it to the addon's generated
//! declarations with napi-rs's `dtsHeaderFile` (the example addon does).
//!
//! # Guarantees
//!
//! - The closure runs off the JavaScript thread; its value is converted on it.
//! - A promise settles once: the first of the signal, another cancel and the closure's return
//!   settles it.
//! - A finished job leaves no listener on its signal; jobs that share a signal share one
//!   listener.
//! - A panic in the closure (or in the conversion of its value) rejects the promise; it never
//!   aborts the process (unless the job's options ask for [`PanicPolicy::Abort`]).
//! - Every closure counts in [`stats()`]`.running` until it returns. Each addon links its own
//!   copy of `tethered`, so its `stats()` counts its own jobs.

#![forbid(unsafe_code)]
#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod abort;
mod environment;
mod errors;
mod helpers;
mod job;
mod observe;
mod output;
mod panics;
mod pool;
mod promise;
mod signal;
mod spawn;
mod sync;

pub use observe::{cancel_stats, set_stubborn_after, stubborn_jobs};
pub use output::{IntoJsResult, marker};
pub use spawn::{CallOptions, spawn_native, spawn_native_with};
/// The core crate, for what the names below leave out (a `CancelSource`, a `Spawner`).
pub use tethered;
#[doc(no_inline)]
pub use tethered::{
    CancelReason, CancelToken, JobOptions, NativeScope, NativeStats, PanicPolicy, ThreadSpawner,
    stats,
};

/// The TypeScript declarations of the crate's JavaScript surface: `CallOptions`, the
/// `AbortError` and the coded errors its promises reject with. Prepend them to an addon's
/// generated `index.d.ts` (napi-rs's `dtsHeaderFile`, pointing at a file with this text).
///
/// ```
/// assert!(tethered_napi::TYPESCRIPT.contains("export interface CallOptions"));
/// ```
pub const TYPESCRIPT: &str = include_str!("../tethered-napi.d.ts");

/// How many threads the addon's default pool runs at most: the machine's
/// `std::thread::available_parallelism` (4 if it cannot be told).
///
/// ```
/// assert!(tethered_napi::pool_size() >= 1);
/// ```
pub fn pool_size() -> usize {
    pool::size()
}
