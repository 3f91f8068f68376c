//! [tethered] on async-std: blocking jobs (`async_std::task::spawn_blocking`) that are
//! cancelled when the future awaiting them is dropped.
//!
//! **async-std is discontinued.** Its 1.13.1 release notes say so and recommend smol, and
//! [RUSTSEC-2025-0052](https://rustsec.org/advisories/RUSTSEC-2025-0052) records it. This crate
//! stays, works and is tested, for programs that still run on async-std; new code should use
//! [`tethered-smol`](https://docs.rs/tethered-smol), which has the same functions on the same
//! blocking pool.
//!
//! With plain `spawn_blocking`, a closure that has started runs on after its caller gave up
//! (dropping the `JoinHandle` even detaches it), burning CPU and holding a pool thread.
//! [`spawn_native`] hands the closure a [`CancelToken`](tethered::CancelToken) instead, and
//! dropping the returned [`AbortableNative`](tethered::AbortableNative), which is what a timeout,
//! a lost race or a cancelled task does, cancels it.
//!
//! ```
//! use std::time::Duration;
//! use tethered::{CancelReason, Tethered};
//!
//! let result = async_std::task::block_on(async {
//!     let job = tethered_async_std::spawn_native(|token| {
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
//! - [`AsyncStdSpawner`]: the [`Spawner`](tethered::Spawner) behind them, for
//!   [`JobOptions::on`](tethered::JobOptions::on) and
//!   [`NativeScope::with_spawner`](tethered::NativeScope::with_spawner).
//!
//! Everything else (tokens, timeouts with [`Tethered::timeout`](tethered::Tethered::timeout),
//! scopes, `stats()`) is in [tethered].
//!
//! # No runtime to be outside of
//!
//! async-std's executor and blocking pool are process-wide, start on first use and never shut
//! down: these functions work on any thread, in an async-std task or not (where
//! `tethered_tokio::spawn_native` panics outside a runtime, this one never does). Size the pool
//! with the `BLOCKING_MAX_THREADS` environment variable (default 500), read once when the pool
//! starts.
//!
//! [tethered]: https://docs.rs/tethered

#![forbid(unsafe_code)]
#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]

mod spawn;
mod spawner;

pub use spawn::{spawn_native, spawn_native_with};
pub use spawner::AsyncStdSpawner;

// The README's example is a doc test too.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
