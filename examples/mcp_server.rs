//! An MCP server (on rmcp, the official Rust SDK) whose tool calls run native work that stops
//! when the call ends, however it ends: the client cancels it (`notifications/cancelled`), its
//! request times out (rmcp's client sends the cancel), the client closes the session or dies,
//! or the server shuts down (SIGTERM, Ctrl-C).
//!
//! ```text
//! cargo run --release --example mcp_server                             # stdio
//! cargo run --release --example mcp_server -- --http 127.0.0.1:8080    # streamable HTTP, at /mcp
//! ```
//!
//! Tools:
//! - `spin` `{"seconds": number}`: a native busy loop on a tethered job that checks its token;
//!   the text `done` if it runs to the end.
//! - `sandbox` `{"code": string}`: untrusted rhai code, stopped by the same token (rhai's
//!   progress callback reads it every 1,000 operations); its value as text.
//! - `running` `{}`: the text of `{"running": N}`, the tethered native jobs of this process
//!   still running (`tethered::stats()`).
//!
//! What each ending does, and where this recipe closes a gap rmcp 3.11 leaves:
//! - `notifications/cancelled`, and a client's request timeout: rmcp cancels the request's
//!   `RequestContext::ct`, which `tethered-tokio-util` relays to the job's token (`Dropped`).
//! - stdio closed (the client closed the session or died): rmcp lets in-flight handlers run up
//!   to 5 s to flush their answers before it cancels them, which would leave the native work
//!   burning for that long with nobody to read the answer. The server reads stdin through
//!   [`EndOfInput`], which cancels the connection's token (`Dropped`) the moment stdin ends.
//! - HTTP: the server is stateless (`legacy_session_mode(false)`): each call is one POST, and
//!   rmcp cancels its `ct` when the client drops it (a cancel, a timeout, a closed or dead
//!   client alike); a short SSE keep-alive makes hyper notice the drop within 250 ms.
//! - SIGTERM or Ctrl-C: `tethered-server` cancels its token (`Shutdown`), of which every job is
//!   a child, stops the MCP service, and exits within [`SHUTDOWN_GRACE`] with a report on stderr.
//!
//! Every job that stops prints a line on stderr, `mcp_server: stopped <tool> (<reason>) at
//! <ns>` (`CLOCK_MONOTONIC`), which the tests in `tests/mcp.rs` read with the rmcp client.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{
    ErrorData, RoleServer, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router,
};
use serde::Deserialize;
use tethered::{CancelReason, CancelSource, CancelToken, JobOptions};
use tethered_server::Server;
use tokio::io::{AsyncRead, ReadBuf};

/// How long a shutdown waits for the jobs it cancelled.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// The longest `spin` a call may ask for.
const MAX_SECONDS: f64 = 3600.0;

/// The tools, and the tokens every job of this connection is a child of.
#[derive(Clone)]
struct Tools {
    tool_router: ToolRouter<Self>,
    /// Cancelled with `Dropped` when stdio ends (for HTTP, never: each POST's `ct` does it).
    connection: CancelToken,
    /// The server's: cancelled with `Shutdown` on SIGTERM or Ctrl-C.
    server: CancelToken,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SpinArgs {
    /// How long to spin, in seconds (0 to 3600).
    seconds: f64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SandboxArgs {
    /// A rhai script, untrusted: it may loop forever.
    code: String,
}

#[tool_router]
impl Tools {
    fn new(connection: CancelToken, server: CancelToken) -> Tools {
        Tools {
            tool_router: Self::tool_router(),
            connection,
            server,
        }
    }

    #[tool(description = "Spin a native busy loop for `seconds`; `done` if it ran to the end.")]
    async fn spin(
        &self,
        Parameters(SpinArgs { seconds }): Parameters<SpinArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        if !(0.0..=MAX_SECONDS).contains(&seconds) {
            return Err(ErrorData::invalid_params(
                format!("`seconds` must be a number from 0 to {MAX_SECONDS}, not {seconds}"),
                None,
            ));
        }
        let run_for = Duration::from_secs_f64(seconds);
        let finished = self
            .run("spin", &context, move |token| {
                let until = Instant::now() + run_for;
                let mut x = 1u64;
                while !token.is_cancelled() {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                    if Instant::now() >= until {
                        return true;
                    }
                }
                false
            })
            .await?;
        if finished {
            Ok(CallToolResult::success(vec![ContentBlock::text("done")]))
        } else {
            Err(ErrorData::internal_error("the call was stopped", None))
        }
    }

    #[tool(description = "Run untrusted rhai code; its value as text.")]
    async fn sandbox(
        &self,
        Parameters(SandboxArgs { code }): Parameters<SandboxArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let outcome = self
            .run("sandbox", &context, move |token| {
                let mut engine = rhai::Engine::new();
                // rhai calls this every operation: one atomic load each 1,000 of them.
                engine.on_progress(move |operations| {
                    (operations % 1_000 == 0 && token.is_cancelled())
                        .then(|| rhai::Dynamic::from("stopped"))
                });
                engine
                    .eval::<rhai::Dynamic>(&code)
                    .map(|value| value.to_string())
                    .map_err(|err| err.to_string())
            })
            .await?;
        match outcome {
            Ok(value) => Ok(CallToolResult::success(vec![ContentBlock::text(value)])),
            Err(err) => Ok(CallToolResult::error(vec![ContentBlock::text(err)])),
        }
    }

    #[tool(description = "The tethered native jobs of this server still running, as JSON.")]
    async fn running(&self) -> String {
        format!("{{\"running\": {}}}", tethered::stats().running)
    }

    /// Runs `f` on tokio's blocking pool as a tethered job, a child of the request's `ct`, of
    /// the connection and of the server: whichever of them goes first stops it.
    async fn run<T, F>(
        &self,
        tool: &'static str,
        context: &RequestContext<RoleServer>,
        f: F,
    ) -> Result<T, ErrorData>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        let request = tethered_tokio_util::cancel_source_from(&context.ct);
        let options = JobOptions::new()
            .name(tool)
            .child_of(&request.token())
            .child_of(&self.connection)
            .child_of(&self.server);
        let job = tethered_tokio::spawn_native_with(options, move |token| {
            let value = f(token.clone());
            if let Some(reason) = token.reason() {
                eprintln!(
                    "mcp_server: stopped {tool} ({reason:?}) at {}",
                    monotonic_ns()
                );
            }
            value
        })
        .map_err(|err| ErrorData::internal_error(format!("the job did not start: {err}"), None))?;
        match job.await {
            Ok(value) => Ok(value),
            Err(stopped) => Err(ErrorData::internal_error(
                format!("the call was stopped: {}", stopped.without_returned()),
                None,
            )),
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// `CLOCK_MONOTONIC` in nanoseconds: the clock a test in another process reads too.
#[cfg(unix)]
fn monotonic_ns() -> u128 {
    let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always there");
    u128::try_from(now.tv_sec()).unwrap_or(0) * 1_000_000_000
        + u128::try_from(now.tv_nsec()).unwrap_or(0)
}

/// Elsewhere: nanoseconds since the first call (no test reads it across processes there).
#[cfg(not(unix))]
fn monotonic_ns() -> u128 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos()
}

/// Stdin that cancels `source` with `Dropped` once it ends (or fails): the client closed its
/// end, or died.
struct EndOfInput<R> {
    inner: R,
    source: CancelSource,
}

impl<R: AsyncRead + Unpin> AsyncRead for EndOfInput<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let ended = match &polled {
            Poll::Ready(Ok(())) => buf.filled().len() == before,
            Poll::Ready(Err(_)) => true,
            Poll::Pending => false,
        };
        if ended {
            self.source.cancel(CancelReason::Dropped);
        }
        polled
    }
}

/// Serves one client over stdio until it goes or the server shuts down.
async fn serve_stdio(server: CancelToken) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let connection = CancelSource::new();
    let stdin = EndOfInput {
        inner: tokio::io::stdin(),
        source: connection.clone(),
    };
    let service = Tools::new(connection.token(), server.clone())
        .serve((stdin, tokio::io::stdout()))
        .await?;
    let ct = service.cancellation_token();
    tokio::select! {
        quit = service.waiting() => { quit?; }
        _ = server.cancelled() => ct.cancel(),
    }
    Ok(())
}

/// Serves streamable HTTP at `http://{addr}/mcp` until the server shuts down.
async fn serve_http(
    addr: &str,
    server: CancelToken,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let stop = tokio_util::sync::CancellationToken::new();
    let tools = Tools::new(CancelToken::never(), server.clone());
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_sse_keep_alive(Some(Duration::from_millis(250)))
        .with_cancellation_token(stop.child_token());
    let service: StreamableHttpService<Tools, LocalSessionManager> = StreamableHttpService::new(
        move || Ok(tools.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(addr).await?;
    eprintln!(
        "mcp_server: listening on http://{}/mcp",
        listener.local_addr()?
    );
    let shutdown = async move {
        server.cancelled().await;
        stop.cancel();
    };
    axum::serve(listener, router)
        .with_graceful_shutdown(shutdown)
        .await?;
    Ok(())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let http = match (args.next().as_deref(), args.next()) {
        (None, _) => None,
        (Some("--http"), Some(addr)) => Some(addr),
        _ => return Err("usage: mcp_server [--http HOST:PORT]".into()),
    };
    let server = Server::new()?;
    let token = server.token().clone();
    let outcome = server.run(SHUTDOWN_GRACE, async move {
        match http {
            Some(addr) => serve_http(&addr, token).await,
            None => serve_stdio(token).await,
        }
    });
    match outcome {
        Ok(report) => {
            eprintln!("mcp_server: {report}");
            Ok(())
        }
        Err(failed) => {
            eprintln!("mcp_server: {failed}");
            Err("the server failed".into())
        }
    }
}
