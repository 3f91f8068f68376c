//! A JavaScript `AbortSignal` reaches the native work a Node.js addon runs: a napi-rs function
//! runs its work on a native thread with a [`CancelToken`], and aborting the signal cancels the
//! token.
//!
//! napi-rs's `AsyncTask::with_signal` only cancels work that has not started: once `compute`
//! runs, `abort()` changes nothing and a libuv thread burns on until the work is done. A
//! server that aborts a request's work when its client disconnects, or with
//! `AbortSignal.timeout(ms)`, leaks a thread per abort. [`spawn_native`] returns a promise
//! instead, tied to the job: the signal's `abort` event cancels the job's token, which the
//! native loop checks with one atomic load, and the promise rejects with `signal.reason` at
//! once, as `fetch` does.
//!
//! ```
//! use napi::Env;
//! use napi::bindgen_prelude::{Object, PromiseRaw};
//!
//! /// `run(script, signal?)`: interprets `script` on a native thread; aborting `signal`
//! /// stops the interpreter within 1,000 steps.
//! fn run<'env>(
//!     env: &'env Env,
//!     script: String,
//!     signal: Option<Object<'env>>,
//! ) -> napi::Result<PromiseRaw<'env, u32>> {
//!     tethered_napi::spawn_native(env, signal, move |token| {
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
//!   const steps = await addon.run(script, signal);
//! } catch (err) {
//!   // err === signal.reason: a DOMException named TimeoutError; the interpreter has stopped
//! }
//! ```
//!
//! No Rust async runtime is involved: the job runs on a [`tethered::Spawner`] (a new thread by
//! default; see below), and its outcome reaches JavaScript through the promise's threadsafe
//! function.
//!
//! # What cancels a job, and what the promise does
//!
//! | On the JavaScript side | The job's token | The promise ([`spawn_native`]) |
//! | --- | --- | --- |
//! | `controller.abort()`, `controller.abort(reason)` | [`CancelReason::Custom`] with the reason's `message` (or its text) | rejects at once with `signal.reason` |
//! | `AbortSignal.timeout(ms)` firing | [`CancelReason::Timeout`] | rejects at once with `signal.reason` (a `TimeoutError`) |
//! | `AbortSignal.any([...])` | as the signal that fired | rejects with its reason |
//! | a signal aborted before the call | (the closure never runs) | rejects with `signal.reason` |
//! | a parent token ([`Builder::child_of`]), a [`NativeScope`](tethered::NativeScope) | theirs | rejects at once with a `DOMException` `AbortError` (`TimeoutError` for a timeout) naming the reason |
//! | the environment's teardown: a `Worker` terminated, the process exiting | [`CancelReason::Shutdown`] | nothing settles any more |
//!
//! [`spawn_native_joined`] settles the same way, but only once the closure has returned.
//! Whatever cancelled it, a cancelled job's promise rejects: a value its closure returned
//! after the cancel is dropped.
//!
//! # Where jobs run
//!
//! On a new thread each, by default. libuv's pool (`AsyncTask`) has 4 threads, which `fs`,
//! `dns.lookup`, `crypto` and `zlib` share: a few long native jobs there stall every file read
//! of the process, and a closure that ignores its token would hold one of them for good. A
//! thread of its own costs about 10 µs to start and cannot block anyone else. For many short
//! jobs, bound them: [`Builder::scope`] with a [`NativeScope`](tethered::NativeScope) caps how
//! many run at once (queued ones never start if cancelled first), and
//! [`Builder::spawner`] runs them on a pool of your own.
//!
//! # When the environment goes away
//!
//! The first job of an environment (the main thread's, or a `worker_threads` Worker's)
//! registers a Node-API cleanup hook and a listener on `process`'s `exit` event (the
//! `process.exit()` path runs no cleanup hook). Either one cancels every running job of the
//! environment with [`CancelReason::Shutdown`] and waits up to 100 ms for them to return, so
//! that closures that check their token finish before the thread or the process goes. After
//! that, no job starts in that environment. A closure that ignores its token keeps its thread
//! (counted in [`tethered::stats()`]`.running` until it returns), and what it returns never
//! reaches a torn-down environment: napi-rs retires each promise's threadsafe function in the
//! teardown, and the outcome is dropped (on `process.exit()`, where the environment is not torn
//! down, an outcome queued during the grace is dropped with the exiting process).
//!
//! # Guarantees
//!
//! - The closure runs off the JavaScript thread; its value is converted on it.
//! - A promise settles once: the first of the signal, another cancel and the closure's return
//!   settles it.
//! - A finished job leaves no listener on its signal; jobs that share a signal share one
//!   listener.
//! - A panic in the closure (or in the conversion of its value) rejects the promise with an
//!   `Error`; it never aborts the process.
//! - Every closure counts in [`tethered::stats()`]`.running` until it returns. Each addon links
//!   its own copy of `tethered`, so its `stats()` counts its own jobs.

#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod builder;
mod environment;
mod job;
mod listeners;
mod output;
mod signal;
mod spawn;
mod sync;

pub use builder::Builder;
pub use output::{IntoJsResult, marker};
pub use spawn::{spawn_native, spawn_native_joined};
#[doc(no_inline)]
pub use tethered::{CancelReason, CancelToken};
