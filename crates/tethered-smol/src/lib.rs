//! [tethered] on smol: jobs on the `blocking` pool (the threads behind `smol::unblock`) that are
//! cancelled when the future awaiting them is dropped.
//!
//! With plain `smol::unblock`, dropping the `Task` stops a closure that has not started, but one
//! that runs keeps running: it burns CPU and holds a pool thread after its caller gave up.
//! [`spawn_native`] hands the closure a [`CancelToken`](tethered::CancelToken) instead, and
//! dropping the returned [`AbortableNative`](tethered::AbortableNative), which is what a timeout,
//! a lost race, a dropped `Task` or a dropped `Executor` does, cancels it.
//!
//! ```
//! use std::time::Duration;
//! use tethered::{CancelReason, Tethered};
//!
//! let result = smol::block_on(async {
//!     let job = tethered_smol::spawn_native(|token| {
//!         let mut steps = 0u64;
//!         while !token.is_cancelled() {
//!             steps += 1; // blocking work, checking the token as it goes
//!         }
//!         steps
//!     });
//!     job.timeout(Duration::from_millis(20)).await
//! });
//! // The caller gets the timeout at once; the closure saw `Timeout` and has returned or will.
//! assert_eq!(result.unwrap_err().cancel_reason(), Some(CancelReason::Timeout));
//! ```
//!
//! # What is here
//!
//! - [`spawn_native`]: run `FnOnce(CancelToken) -> T` on the pool.
//! - [`spawn_native_with`]: the same with [`JobOptions`](tethered::JobOptions) (a name, a
//!   deadline, a grace, a request's token, a scope, a panic policy).
//! - [`SmolSpawner`]: the [`Spawner`](tethered::Spawner) behind them, for
//!   [`JobOptions::on`](tethered::JobOptions::on) and
//!   [`NativeScope::with_spawner`](tethered::NativeScope::with_spawner).
//!
//! Everything else (tokens, timeouts with [`Tethered::timeout`](tethered::Tethered::timeout),
//! scopes, `stats()`) is in [tethered].
//!
//! # No runtime to be outside of
//!
//! The `blocking` pool is process-wide and needs no runtime context: these functions work on
//! any thread, in an executor or not, and keep working after every smol `Executor` is dropped:
//! where `tethered_tokio::spawn_native` panics outside a runtime, this one never does. Size the
//! pool with the `BLOCKING_MAX_THREADS` environment variable (default 500), read once when the
//! pool starts.
//!
//! [tethered]: https://docs.rs/tethered

#![forbid(unsafe_code)]
#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]

mod spawn;
mod spawner;

pub use spawn::{spawn_native, spawn_native_with};
pub use spawner::SmolSpawner;

// The README's example is a doc test too.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
