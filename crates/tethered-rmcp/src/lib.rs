//! MCP servers on rmcp (the official Rust SDK) whose tool calls run native work that stops
//! however the call ends: the client's cancel or its timeout (`notifications/cancelled`), its
//! closed stdin, session or connection, the server's own limit, or the server's shutdown.
//!
//! An rmcp tool gets `RequestContext::ct`, a token rmcp cancels on `notifications/cancelled`,
//! but a tool's native work (a script interpreter, a solver, a query) runs on a thread that
//! never looks at it, and rmcp leaves several endings unsaid: at the end of stdin it lets the
//! calls run 5 s more to flush answers nobody reads; over streamable HTTP it never relays a
//! cancel that comes in a POST of its own without a session; on a dropped connection with
//! sessions it lets the call run on. This crate ties the call's job to all of them.
//!
//! ```no_run
//! use std::time::Duration;
//! use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
//! use rmcp::{ServerHandler, schemars, tool, tool_handler, tool_router};
//! use tethered_rmcp::{CallStopped, ToolCall, ToolJobs};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Count {
//!     to: u64,
//! }
//!
//! #[derive(Clone)]
//! struct Tools {
//!     tool_router: ToolRouter<Self>,
//! }
//!
//! #[tool_router]
//! impl Tools {
//!     /// Counts to `to` on a native thread, stopped however the call ends.
//!     #[tool]
//!     async fn count(&self, Parameters(Count { to }): Parameters<Count>, call: ToolCall)
//!         -> Result<String, CallStopped>
//!     {
//!         call.run(move |token| (0..to).take_while(|_| !token.is_cancelled()).count())
//!             .await
//!             .map(|n| n.to_string())
//!     }
//! }
//!
//! #[tool_handler(router = self.tool_router)]
//! impl ServerHandler for Tools {}
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let server = tethered_server::Server::new()?; // SIGTERM, Ctrl-C: one deadline
//!     let jobs = ToolJobs::of(&server);
//!     let tools = Tools { tool_router: Tools::tool_router() };
//!     let report = server.run(Duration::from_secs(2), tethered_rmcp::serve_stdio(tools, jobs))?;
//!     eprintln!("{report}");
//!     Ok(())
//! }
//! ```
//!
//! # What ends a call, and what its job reads
//!
//! | The call ends because | stdio | streamable HTTP, sessions | streamable HTTP, stateless | The job's [`CancelReason`](tethered::CancelReason) | The answer |
//! | --- | --- | --- | --- | --- | --- |
//! | the client sends `notifications/cancelled` (its cancel, its request timeout) | stops | stops | see [`streamable_http`] | `Dropped`, the client's reason text as the cause | none: rmcp drops it |
//! | the client closes stdin or dies | stops, at once | | | `Dropped` | none |
//! | the client closes its session (`DELETE`), or the session's idle end | | stops, at once | | `Dropped` | none |
//! | the client drops the call's stream | | stops | stops | `Dropped` | none |
//! | the server's limit ([`ToolJobs::timeout`]) | stops | stops | stops | `Timeout` | a tool error: `timed out: ...` |
//! | the server shuts down (SIGTERM, with `tethered-server`) | stops | stops | stops | `Shutdown` | a tool error: `server shutting down: ...` |
//!
//! A stdio server shut down this way exits as soon as its calls have stopped: stdin is never
//! read on tokio's blocking pool, whose shutdown would wait for the read.
//!
//! # The pieces
//!
//! - [`ToolJobs`]: the server's token, scope and limit, shared by every call.
//! - [`ToolCall`]: a `#[tool]` function's argument; [`ToolCall::run`] runs the call's native
//!   job; [`CallStopped`] is its error, a tool error the client reads.
//! - [`serve_stdio`]: a server over stdio; [`streamable_http`]: rmcp's HTTP service,
//!   tethered; [`Tethered`]: any transport, tethered; [`TetheredSessions`]: any session
//!   manager, tethered.

#![forbid(unsafe_code)]
#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod call;
mod calls;
mod http;
mod jobs;
mod stdio;
mod stopped;
mod sync;
mod transport;

pub use call::ToolCall;
pub use http::{McpService, TetheredSessions, WithJobs, streamable_http, streamable_http_with};
pub use jobs::ToolJobs;
pub use stdio::serve_stdio;
pub use stopped::CallStopped;
pub use transport::Tethered;

// The README's example is a doc test too.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
