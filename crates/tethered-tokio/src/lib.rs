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
//! use tethered::{CancelReason, NativeError};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let job = tethered_tokio::spawn_native(|token| {
//!     let mut primes_checked = 0u64;
//!     while !token.is_cancelled() {
//!         primes_checked += 1; // one slice of a long, blocking computation
//!     }
//!     primes_checked
//! });
//! let token = job.token();
//!
//! let result = tethered_tokio::timeout(Duration::from_millis(10), job).await;
//! assert!(matches!(result, Err(NativeError::Cancelled(CancelReason::Timeout))));
//! assert_eq!(token.reason(), Some(CancelReason::Timeout)); // the closure heard it
//! # }
//! ```
//!
//! # The pieces
//!
//! - [`spawn_native`] / [`try_spawn_native`]: a tethered `spawn_blocking` on the current
//!   runtime. The `try_` form returns a [`SpawnError`](tethered::SpawnError) outside a runtime
//!   and once the runtime is shutting down, where tokio would drop the closure silently.
//! - [`timeout`]: a deadline on tokio's timer that cancels the job with
//!   [`CancelReason::Timeout`](tethered::CancelReason::Timeout).
//! - [`TokioSpawner`]: the [`Spawner`](tethered::Spawner) behind them, for a runtime named by
//!   its [`Handle`](tokio::runtime::Handle) and for the core's
//!   [`Builder::spawn_on`](tethered::Builder::spawn_on).
//! - With the `tokio-util` feature, [`link`] and [`cancel_source_from`] tie tethered sources to
//!   `tokio_util::sync::CancellationToken`s both ways.
//!
//! Everything else (tokens, callbacks, children, the job handle, stats) is the core crate,
//! [`tethered`].

#![forbid(unsafe_code)]
// `doc_cfg` labels the `tokio-util` items on docs.rs (nightly folded `doc_auto_cfg` into it).
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "tokio-util")]
mod cancellation_link;
mod spawn;
mod spawner;
mod timeout;

#[cfg(feature = "tokio-util")]
pub use cancellation_link::{CancellationLink, cancel_source_from, link};
pub use spawn::{spawn_native, try_spawn_native};
pub use spawner::TokioSpawner;
pub use timeout::{Timeout, timeout};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
