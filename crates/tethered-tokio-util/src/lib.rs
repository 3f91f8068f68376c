//! Links between [`tethered`]'s cancellation and `tokio_util::sync::CancellationToken`, both
//! ways: for code that hands out or receives tokio-util tokens (an rmcp tool's
//! `RequestContext::ct`, a tokio service's shutdown token) and starts tethered native work.
//!
//! ```
//! use tethered::{CancelReason, CancelSource};
//! use tokio_util::sync::CancellationToken;
//!
//! // An rmcp tool gets `context.ct`; its native job stops when the client cancels the call.
//! let ct = CancellationToken::new();
//! let source = tethered_tokio_util::cancel_source_from(&ct);
//! ct.cancel(); // `notifications/cancelled`
//! assert_eq!(source.token().reason(), Some(CancelReason::Dropped));
//!
//! // The other way: a tethered cancel reaches code that waits on a `CancellationToken`.
//! let source = CancelSource::new();
//! let ct = CancellationToken::new();
//! let _link = tethered_tokio_util::link(&source, &ct);
//! source.cancel(CancelReason::Shutdown);
//! assert!(ct.is_cancelled());
//! ```
//!
//! A `CancellationToken` that is cancelled reads [`CancelReason::Dropped`](tethered::CancelReason::Dropped)
//! on the tethered side: it is how tokio-util code says that the caller gave up (see the reason
//! table of [`CancelReason`](tethered::CancelReason)). tokio-util is a 0.x crate: its types
//! appear only in this crate's public signatures, so its breaking releases are this crate's
//! alone.

#![forbid(unsafe_code)]
#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod link;

pub use link::{CancellationLink, cancel_source_from, link};

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
