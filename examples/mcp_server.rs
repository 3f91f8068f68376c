//! An MCP server (on rmcp, the official Rust SDK) whose tool calls run native work that stops
//! when the call ends, however it ends: the client cancels it (`notifications/cancelled`), its
//! request times out, the client closes stdin or its session, drops the call's connection or
//! dies, or the server shuts down (SIGTERM, Ctrl-C). `tethered-rmcp` does all of it: the
//! tethered part of this server is the `ToolCall` argument, `call.run(..)`, `ToolJobs` and
//! `serve_stdio` / `streamable_http` (12 lines), the rest is the tools' own work.
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
//! HTTP serves sessions (rmcp's default): a client of the protocol before 2026-07-28 (the
//! Python and TypeScript SDKs') cancels a call with `notifications/cancelled` in a POST of its
//! own, which only a session routes to its call. A SIGTERM stops every call (`Shutdown`), and
//! the process exits as soon as they have stopped, within [`SHUTDOWN_GRACE`] at most, with a
//! report on stderr.
//!
//! Every job that stops prints a line on stderr, `mcp_server: stopped <tool> (<reason>) at
//! <ns>` (`CLOCK_MONOTONIC`), which the tests in `tests/mcp.rs` read with the rmcp client, and
//! `tests/mcp_clients.rs` with the Python and TypeScript SDKs' clients.

use std::time::{Duration, Instant};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::StreamableHttpServerConfig;
use rmcp::{ErrorData, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use tethered::CancelToken;
use tethered_rmcp::{CallStopped, ToolCall, ToolJobs};
use tethered_server::Server;

/// How long a shutdown waits for the jobs it cancelled.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);
/// The longest `spin` a call may ask for.
const MAX_SECONDS: f64 = 3600.0;

/// The tools.
#[derive(Clone)]
struct Tools {
    tool_router: ToolRouter<Self>,
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
    fn new() -> Tools {
        Tools {
            tool_router: Self::tool_router(),
        }
    }

    /// Bad input is a protocol error; a stopped call, a tool error (`CallStopped`).
    #[tool(description = "Spin a native busy loop for `seconds`; `done` if it ran to the end.")]
    async fn spin(
        &self,
        Parameters(SpinArgs { seconds }): Parameters<SpinArgs>,
        call: ToolCall,
    ) -> Result<Result<String, CallStopped>, ErrorData> {
        if !(0.0..=MAX_SECONDS).contains(&seconds) {
            return Err(ErrorData::invalid_params(
                format!("`seconds` must be a number from 0 to {MAX_SECONDS}, not {seconds}"),
                None,
            ));
        }
        let run_for = Duration::from_secs_f64(seconds);
        Ok(call
            .run(logged("spin", move |token| {
                let until = Instant::now() + run_for;
                let mut x = 1u64;
                while !token.is_cancelled() {
                    x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                    if Instant::now() >= until {
                        return "done".to_owned();
                    }
                }
                "stopped".to_owned()
            }))
            .await)
    }

    #[tool(description = "Run untrusted rhai code; its value as text.")]
    async fn sandbox(
        &self,
        Parameters(SandboxArgs { code }): Parameters<SandboxArgs>,
        call: ToolCall,
    ) -> Result<Result<String, String>, CallStopped> {
        call.run(logged("sandbox", move |token| {
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
        }))
        .await
    }

    #[tool(description = "The tethered native jobs of this server still running, as JSON.")]
    async fn running(&self) -> String {
        format!("{{\"running\": {}}}", tethered::stats().running)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// `f`, printing `mcp_server: stopped <tool> (<reason>) at <ns>` on stderr once it returns
/// stopped: the line the tests read.
fn logged<T>(
    tool: &'static str,
    f: impl FnOnce(CancelToken) -> T + Send + 'static,
) -> impl FnOnce(CancelToken) -> T + Send + 'static {
    move |token| {
        let value = f(token.clone());
        if let Some(reason) = token.reason() {
            eprintln!(
                "mcp_server: stopped {tool} ({reason:?}) at {}",
                monotonic_ns()
            );
        }
        value
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

/// Serves streamable HTTP at `http://{addr}/mcp`, with sessions, until the server shuts down.
async fn serve_http(
    addr: String,
    jobs: ToolJobs,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    // A keep-alive: a client that vanished without closing its connection (a network gone,
    // not a process killed: its kernel closes the connection) is noticed within seconds.
    let config =
        StreamableHttpServerConfig::default().with_sse_keep_alive(Some(Duration::from_secs(5)));
    let mcp = tethered_rmcp::streamable_http(|| Ok(Tools::new()), &jobs, config);
    let router = axum::Router::new().nest_service("/mcp", mcp);
    let listener = tokio::net::TcpListener::bind(&addr).await?;
    eprintln!(
        "mcp_server: listening on http://{}/mcp",
        listener.local_addr()?
    );
    let server = jobs.server().clone();
    axum::serve(listener, router)
        .with_graceful_shutdown(async move {
            server.cancelled().await;
        })
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
    // The tools are CPU-bound: as many of their jobs run at once as the machine has cores,
    // the others wait in the scope (a cancelled one never starts), so a burst of calls never
    // starves the runtime that serves them.
    let cores = std::thread::available_parallelism().unwrap_or(std::num::NonZeroUsize::MIN);
    let server = Server::new()?.with_max_running(cores);
    let jobs = ToolJobs::of(&server);
    let outcome = server.run(SHUTDOWN_GRACE, async move {
        match http {
            Some(addr) => serve_http(addr, jobs).await,
            None => tethered_rmcp::serve_stdio(Tools::new(), jobs)
                .await
                .map_err(Into::into),
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
