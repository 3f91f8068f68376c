//! [`tethered`] on tokio: blocking-pool jobs that stop when the future awaiting them is dropped.
//!
//! `tokio::task::spawn_blocking` cannot stop a closure once it runs: when the task awaiting it
//! is dropped (a timeout, a lost `select!`, an aborted task, the runtime shutting down) the
//! closure runs on, burning CPU, holding one of the pool's `max_blocking_threads` slots, and
//! keeping the `Runtime` drop from returning. [`spawn_native`] runs the closure on the same pool
//! but hands it a [`CancelToken`](tethered::CancelToken) that is cancelled when the returned
//! [`AbortableNative`](tethered::AbortableNative) is dropped unfinished.
//!
//! ```
//! use std::time::Duration;
//! use tethered::{CancelReason, NativeError, Tethered};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     // On tokio's blocking pool, as `spawn_blocking` would run it, with a token.
//!     let job = tethered_tokio::spawn_native(|token| {
//!         let mut steps = 0u64;
//!         while !token.is_cancelled() { // one atomic load
//!             steps += 1; // a step of an interpreter, a solver, a render...
//!         }
//!         steps // what it got done before it was stopped
//!     });
//!     // A deadline the closure hears; awaiting waits until it has really stopped.
//!     job.cancel_after(Duration::from_millis(50))?;
//!     match job.await {
//!         Ok(steps) => println!("finished after {steps} steps"),
//!         Err(NativeError::Cancelled { reason, returned, .. }) => {
//!             assert_eq!(reason, CancelReason::Timeout);
//!             println!("stopped ({reason}) after {returned:?} steps");
//!         }
//!         Err(other) => return Err(other.into()),
//!     }
//!
//!     // Dropping an unfinished job (a lost `select!`, a client that hung up) stops it too.
//!     let job = tethered_tokio::spawn_native(|token| token.wait());
//!     let token = job.token().clone();
//!     drop(job);
//!     assert_eq!(token.cancelled().await, CancelReason::Dropped);
//!     Ok(())
//! }
//! ```
//!
//! # The pieces
//!
//! - [`spawn_native`]: a tethered `spawn_blocking` on the current runtime. Once the runtime
//!   shuts down its handle resolves to a stop with `Shutdown`, where tokio would drop the
//!   closure silently.
//! - [`spawn_native_with`]: the same with [`JobOptions`](tethered::JobOptions) (a name, a
//!   deadline, a grace, a request's token, a scope, a panic policy), and a refused spawn as a
//!   [`SpawnError`](tethered::SpawnError).
//! - [`TokioSpawner`]: the [`Spawner`](tethered::Spawner) behind them, for a runtime named by
//!   its [`Handle`](tokio::runtime::Handle): for [`JobOptions::on`](tethered::JobOptions::on)
//!   and [`NativeScope::with_spawner`](tethered::NativeScope::with_spawner).
//!
//! Everything else is the core crate, [`tethered`]: tokens, handles, timeouts
//! ([`Tethered::timeout`](tethered::Tethered::timeout)), scopes, groups, stats. A service's
//! runtime, signals and one-deadline shutdown are `tethered-server`; the link to
//! `tokio_util::sync::CancellationToken` is `tethered-tokio-util`.

#![forbid(unsafe_code)]
#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]

mod spawn;
mod spawner;
mod stash;

pub use spawn::{spawn_native, spawn_native_with};
pub use spawner::TokioSpawner;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
