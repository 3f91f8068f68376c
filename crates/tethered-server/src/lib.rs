//! A service's tokio runtime, its server-wide [`CancelToken`](tethered::CancelToken), the
//! [`NativeScope`](tethered::NativeScope)s its handlers spawn native jobs in, and any other part
//! that must stop with it (a `tethered_process::Pool` of worker processes): all shut down as
//! one, within one deadline, on SIGTERM, SIGINT, a cancel, or the main future's return, with
//! one report that names whatever did not stop.
//!
//! ```no_run
//! use std::time::Duration;
//! use tethered::JobOptions;
//! use tethered_server::Server;
//!
//! let server = Server::new()?;
//! let scope = server.scope(); // where the handlers' native jobs go
//! let token = server.token().clone();
//! let outcome = server.run(Duration::from_secs(10), async move {
//!     // A handler's job: in the server's scope, stopped by the shutdown.
//!     let job = tethered_tokio::spawn_native_with(JobOptions::new().in_scope(&scope), |t| {
//!         t.wait() // ... native work that checks its token ...
//!     })?;
//!     token.cancelled().await; // serve until the shutdown begins
//!     let _ = job.await;
//!     Ok::<(), tethered::SpawnError>(())
//! });
//! match outcome {
//!     Ok(report) => println!("{report}"),
//!     Err(failed) => eprintln!("{failed}"),
//! }
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! [`Server`] has the steps of the shutdown; `docs/servers.md` in the repository is the recipe
//! with axum and tonic, request tokens included.

#![forbid(unsafe_code)]
#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod report;
mod server;
mod signal;

pub use report::{ServerError, ServerReport, ShutdownCause};
pub use server::Server;
pub use signal::Signal;

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
