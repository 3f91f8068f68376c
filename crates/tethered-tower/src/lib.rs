//! A tower layer that ties every request to a [`tethered::CancelToken`]: the native work a
//! handler starts stops when the client goes away, when the request's deadline passes, and
//! when the server shuts down, and it learns which of the three it was.
//!
//! hyper drops a handler's future when its client disconnects or resets an HTTP/2 stream, and
//! tonic's timeout drops it too: a tethered job awaited there is cancelled, but only ever with
//! `Dropped`, and the handler has no token to hand to the jobs, sub-requests or scopes it
//! starts. [`RequestTokenLayer`] gives every request one (a [`RequestToken`] in its
//! extensions, a child of a server-wide token), cancels it with `Dropped`, `Timeout` (the
//! `grpc-timeout` header or a configured timeout) or the server's reason, and answers a
//! request stopped by its deadline at the deadline, with the protocol's own status.
//!
//! ```
//! # #[cfg(feature = "axum")] {
//! use std::time::Duration;
//! use axum::{Router, routing::get};
//! use tethered::{CancelSource, JobOptions};
//! use tethered_tower::{RequestToken, RequestTokenLayer};
//!
//! async fn count(token: RequestToken) -> String {
//!     // Stops with the request, with its reason.
//!     let job = tethered_tokio::spawn_native_with(JobOptions::new().child_of(&token), |token| {
//!         let mut n = 0u64;
//!         while !token.is_cancelled() && n < 1_000_000 {
//!             n += 1;
//!         }
//!         n
//!     })
//!     .expect("on a runtime");
//!     match job.await {
//!         Ok(n) => n.to_string(),
//!         Err(stopped) => format!("stopped: {stopped}"),
//!     }
//! }
//!
//! let server = CancelSource::new();
//! let app: Router = Router::new()
//!     .route("/count", get(count))
//!     .layer(RequestTokenLayer::new(&server.token()).timeout(Duration::from_secs(5)));
//! # }
//! ```
//!
//! # Features
//!
//! None is on by default; each puts a 0.x crate's types in this crate's API and is named after
//! it: `axum` (the [`RequestToken`] extractor), `tonic` (`RequestToken::from_tonic`, and the
//! status a tonic client reads from a [`CallStopped`]).
//!
//! A call made on a request's behalf, through a client wrapped in [`ClientTokenLayer`], passes
//! on what is left of the request's deadline as `grpc-timeout` and stops with the request, so a
//! deadline set at the edge travels every hop ([`grpc_timeout`] gives the header by itself).
//!
//! In tonic (feature `tonic`), a handler reads its token with `RequestToken::from_tonic`.

#![forbid(unsafe_code)]
#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod body;
mod client;
mod deadline;
mod error;
mod future;
mod layer;
mod token;

pub use body::{BodyStopped, TokenBody};
pub use client::{CallFuture, CallStopped, ClientTokenLayer, ClientTokenService};
pub use deadline::{GRPC_TIMEOUT, InvalidGrpcTimeout, grpc_timeout, parse_grpc_timeout};
pub use error::BoxError;
pub use future::ResponseFuture;
pub use layer::{RequestTokenLayer, RequestTokenService};
pub use token::{NoRequestToken, RequestToken};

// The README's example is a doc test too.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
