//! The MCP example server (`examples/mcp_server.rs`) against rmcp's own client, over stdio and
//! streamable HTTP: every way a tool call can end stops its native job, 200 calls with half of
//! them cancelled leave nothing running, and bad input is answered with a protocol error while
//! other calls go on. The server prints `mcp_server: stopped <tool> (<reason>) at <ns>` on
//! stderr for every job that stopped, on `CLOCK_MONOTONIC`, which the tests read too.
//!
//! `cargo test` builds the example first (see `tests/examples.rs`).

#![cfg(target_os = "linux")]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest};
use rmcp::service::{PeerRequestOptions, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{RoleClient, ServiceExt};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, Command};

/// Far above what each step needs; a step that takes this long has failed.
const BOUND: Duration = Duration::from_secs(10);

type Client = RunningService<RoleClient, ()>;

/// The compiled example.
fn server_binary() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary sits in target/<profile>/deps");
    let path = profile.join("examples").join("mcp_server");
    assert!(
        path.exists(),
        "{} is missing: run `cargo build --examples` (or all of `cargo test`) first",
        path.display()
    );
    path
}

/// `CLOCK_MONOTONIC` in nanoseconds, as the server prints it.
fn monotonic_ns() -> u128 {
    let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).unwrap();
    u128::try_from(now.tv_sec()).unwrap() * 1_000_000_000 + u128::try_from(now.tv_nsec()).unwrap()
}

/// What the server wrote on stderr, line by line, as it comes.
#[derive(Clone, Default)]
struct Stderr(Arc<Mutex<Vec<String>>>);

impl Stderr {
    fn follow(stderr: ChildStderr) -> Stderr {
        let lines = Stderr::default();
        let kept = lines.clone();
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                kept.0.lock().unwrap().push(line);
            }
        });
        lines
    }

    /// The first line that `matches`, waiting up to [`BOUND`].
    async fn wait_for(&self, what: &str, matches: impl Fn(&str) -> bool) -> String {
        let until = Instant::now() + BOUND;
        loop {
            if let Some(line) = self.0.lock().unwrap().iter().find(|l| matches(l)) {
                return line.clone();
            }
            assert!(
                Instant::now() < until,
                "no {what} on the server's stderr within {BOUND:?}:\n{}",
                self.0.lock().unwrap().join("\n")
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// The stop lines so far: (tool, reason, at ns).
    fn stops(&self) -> Vec<(String, String, u128)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|line| {
                let rest = line.strip_prefix("mcp_server: stopped ")?;
                let (tool, rest) = rest.split_once(" (")?;
                let (reason, at) = rest.split_once(") at ")?;
                Some((tool.to_owned(), reason.to_owned(), at.parse().ok()?))
            })
            .collect()
    }

    /// Waits for the `n`-th stop line; returns it.
    async fn stop(&self, n: usize) -> (String, String, u128) {
        let until = Instant::now() + BOUND;
        loop {
            let stops = self.stops();
            if stops.len() >= n {
                return stops[n - 1].clone();
            }
            assert!(
                Instant::now() < until,
                "the native job did not stop within {BOUND:?}; stderr:\n{}",
                self.0.lock().unwrap().join("\n")
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    }
}

/// A running server: its process and its stderr.
struct Server {
    child: Child,
    stderr: Stderr,
    /// The HTTP endpoint, for `--http`.
    url: Option<String>,
}

impl Server {
    /// The server over stdio, its stdin and stdout left piped for the caller.
    fn stdio() -> Server {
        let mut child = Command::new(server_binary())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the example starts");
        let stderr = Stderr::follow(child.stderr.take().unwrap());
        Server {
            child,
            stderr,
            url: None,
        }
    }

    /// The server over streamable HTTP on a free port.
    async fn http() -> Server {
        let mut child = Command::new(server_binary())
            .args(["--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the example starts");
        let stderr = Stderr::follow(child.stderr.take().unwrap());
        let line = stderr
            .wait_for("the address", |l| l.contains("listening on "))
            .await;
        let url = line.split("listening on ").nth(1).unwrap().to_owned();
        Server {
            child,
            stderr,
            url: Some(url),
        }
    }

    /// rmcp's client, over the server's stdio (taken) or its HTTP endpoint.
    async fn client(&mut self) -> Client {
        let client = match &self.url {
            Some(url) => ().serve(StreamableHttpClientTransport::from_uri(url.clone())).await,
            None => {
                let stdout = self.child.stdout.take().expect("one stdio client");
                let stdin = self.child.stdin.take().expect("one stdio client");
                ().serve((stdout, stdin)).await
            }
        };
        client.expect("the client initializes")
    }

    /// Sends SIGTERM; the exit status, within [`BOUND`].
    async fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = nix::unistd::Pid::from_raw(self.child.id().unwrap() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        tokio::time::timeout(BOUND, self.child.wait())
            .await
            .expect("the server exits after SIGTERM")
            .unwrap()
    }
}

fn call(tool: &str, arguments: serde_json::Value) -> CallToolRequestParams {
    let params = CallToolRequestParams::new(tool.to_owned());
    match arguments {
        serde_json::Value::Object(map) => params.with_arguments(map),
        _ => params,
    }
}

/// The `running` tool's count.
async fn running(client: &Client) -> u64 {
    let result = client
        .call_tool(call("running", json!({})))
        .await
        .expect("running answers");
    let text = result.content[0].as_text().expect("text").text.clone();
    let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    value["running"].as_u64().expect("a count")
}

/// Waits until the server counts `n` jobs running.
async fn until_running(client: &Client, n: u64) {
    let until = Instant::now() + BOUND;
    while running(client).await != n {
        assert!(Instant::now() < until, "never {n} jobs running");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Starts a long `spin` call in a task of its own: aborting the task drops the call, and
/// rmcp's client tells the server with `notifications/cancelled`.
fn long_spin(client: &Client) -> tokio::task::JoinHandle<()> {
    let peer = client.peer().clone();
    tokio::spawn(async move {
        let _ = peer.call_tool(call("spin", json!({"seconds": 600}))).await;
    })
}

async fn cancel_stops_the_job(mut server: Server) {
    let client = server.client().await;
    let task = long_spin(&client);
    until_running(&client, 1).await;
    task.abort();
    let (tool, reason, _) = server.stderr.stop(1).await;
    assert_eq!((tool.as_str(), reason.as_str()), ("spin", "Dropped"));
    until_running(&client, 0).await;
    // The server goes on answering.
    let done = client
        .call_tool(call("spin", json!({"seconds": 0.01})))
        .await
        .unwrap();
    assert_eq!(done.content[0].as_text().unwrap().text, "done");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_stops_its_job_over_stdio() {
    cancel_stops_the_job(Server::stdio()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_stops_its_job_over_http() {
    cancel_stops_the_job(Server::http().await).await;
}

async fn timeout_stops_the_job(mut server: Server) {
    let client = server.client().await;
    let request =
        ClientRequest::CallToolRequest(CallToolRequest::new(call("spin", json!({"seconds": 600}))));
    let mut options = PeerRequestOptions::no_options();
    options.timeout = Some(Duration::from_millis(300));
    let handle = client
        .peer()
        .send_request_with_option(request, options)
        .await
        .unwrap();
    let answer = handle.await_response().await;
    assert!(
        matches!(answer, Err(rmcp::ServiceError::Timeout { .. })),
        "{answer:?}"
    );
    let (tool, reason, _) = server.stderr.stop(1).await;
    assert_eq!((tool.as_str(), reason.as_str()), ("spin", "Dropped"));
    until_running(&client, 0).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timed_out_call_stops_its_job_over_stdio() {
    timeout_stops_the_job(Server::stdio()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timed_out_call_stops_its_job_over_http() {
    timeout_stops_the_job(Server::http().await).await;
}

/// The client closes its session: over stdio the server's stdin ends, which stops the job at
/// once (rmcp alone would let it run 5 s more) and ends the server.
#[tokio::test(flavor = "multi_thread")]
async fn closing_the_session_stops_the_job_over_stdio() {
    let mut server = Server::stdio();
    let client = server.client().await;
    let _task = long_spin(&client);
    until_running(&client, 1).await;
    let closed = Instant::now();
    client.cancel().await.unwrap();
    let (tool, reason, _) = server.stderr.stop(1).await;
    assert_eq!((tool.as_str(), reason.as_str()), ("spin", "Dropped"));
    // rmcp alone lets a handler run 5 s past the end of its input.
    assert!(
        closed.elapsed() < Duration::from_secs(2),
        "the job stopped {:?} after the session closed",
        closed.elapsed()
    );
    let status = tokio::time::timeout(BOUND, server.child.wait())
        .await
        .expect("the server ends with its session")
        .unwrap();
    assert!(status.success(), "{status}");
    assert!(
        closed.elapsed() < Duration::from_secs(4),
        "the server took {:?} to end after its session closed",
        closed.elapsed()
    );
}

/// The client closes: over HTTP its open calls' connections go, which rmcp's stateless server
/// turns into a cancel.
#[tokio::test(flavor = "multi_thread")]
async fn closing_the_client_stops_the_job_over_http() {
    let mut server = Server::http().await;
    let client = server.client().await;
    let _task = long_spin(&client);
    until_running(&client, 1).await;
    client.cancel().await.unwrap();
    let (tool, reason, _) = server.stderr.stop(1).await;
    assert_eq!((tool.as_str(), reason.as_str()), ("spin", "Dropped"));
    let client = server.client().await;
    until_running(&client, 0).await;
}

/// The initialize handshake and a `spin` call of 600 s, as JSON-RPC lines.
fn handshake_and_spin() -> String {
    [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "killed-client", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "spin", "arguments": {"seconds": 600}}}),
    ]
    .iter()
    .map(|message| format!("{message}\n"))
    .collect()
}

/// A client process, killed with SIGKILL while its call runs: over stdio the server's stdin
/// ends when the process that held its other end dies.
#[tokio::test(flavor = "multi_thread")]
async fn a_killed_client_stops_the_job_over_stdio() {
    // The client: writes the call, then holds the pipe open until it is killed.
    let mut client = std::process::Command::new("sh")
        .args(["-c", "printf '%s' \"$MESSAGES\"; exec sleep 600"])
        .env("MESSAGES", handshake_and_spin())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let pipe = client.stdout.take().unwrap();
    let mut server = Command::new(server_binary())
        .stdin(Stdio::from(pipe))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stderr = Stderr::follow(server.stderr.take().unwrap());
    // The job runs once its closure is on the blocking pool; give the call a moment.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(stderr.stops().is_empty(), "the job stopped before the kill");
    let killed = Instant::now();
    client.kill().unwrap();
    client.wait().unwrap();
    let (tool, reason, _) = stderr.stop(1).await;
    assert_eq!((tool.as_str(), reason.as_str()), ("spin", "Dropped"));
    // rmcp alone lets a handler run 5 s past the end of its input.
    assert!(
        killed.elapsed() < Duration::from_secs(2),
        "the job stopped {:?} after its client died",
        killed.elapsed()
    );
    let status = tokio::time::timeout(BOUND, server.wait())
        .await
        .expect("the server ends with its client")
        .unwrap();
    assert!(status.success(), "{status}");
}

/// `curl` posting `message` in `session` (none: the initialize request) with the headers of
/// the 2025-11-25 protocol.
fn curl(url: &str, session: Option<&str>, message: &serde_json::Value) -> std::process::Command {
    let mut curl = std::process::Command::new("curl");
    curl.args(["-sN", "-X", "POST", url])
        .args(["-H", "Content-Type: application/json"])
        .args(["-H", "Accept: application/json, text/event-stream"])
        .args(["-H", "MCP-Protocol-Version: 2025-11-25"])
        .args(["--data", &message.to_string()]);
    if let Some(session) = session {
        curl.args(["-H", &format!("Mcp-Session-Id: {session}")]);
    }
    curl
}

/// A client process (curl), killed with SIGKILL while its call runs over HTTP: the call's
/// connection drops with no cancel and no `DELETE`.
#[tokio::test(flavor = "multi_thread")]
async fn a_killed_client_stops_the_job_over_http() {
    let mut server = Server::http().await;
    let url = server.url.clone().unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "killed-client", "version": "0"}}});
    let headers = curl(&url, None, &initialize)
        .arg("-D-")
        .output()
        .expect("curl runs");
    let headers = String::from_utf8_lossy(&headers.stdout);
    let session = headers
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .unwrap_or_else(|| panic!("no session id in:\n{headers}"));
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    assert!(
        curl(&url, Some(&session), &initialized)
            .status()
            .unwrap()
            .success()
    );
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "spin", "arguments": {"seconds": 600}}});
    let mut curl = curl(&url, Some(&session), &call)
        .stdout(Stdio::null())
        .spawn()
        .expect("curl runs");
    let client = server.client().await;
    until_running(&client, 1).await;
    curl.kill().unwrap();
    curl.wait().unwrap();
    let (tool, reason, _) = server.stderr.stop(1).await;
    assert_eq!((tool.as_str(), reason.as_str()), ("spin", "Dropped"));
    until_running(&client, 0).await;
}

async fn sigterm_stops_the_job_and_the_server(mut server: Server) {
    let client = server.client().await;
    let _task = long_spin(&client);
    until_running(&client, 1).await;
    let signalled = Instant::now();
    let status = server.terminate().await;
    let took = signalled.elapsed();
    assert!(status.success(), "{status}");
    // The job stops at once, and the server exits with it, not at the end of its 2 s grace
    // (a stdin read on tokio's blocking pool held the runtime's shutdown that long).
    assert!(
        took < Duration::from_millis(1500),
        "the server exited {took:?} after SIGTERM; its job stopped at once"
    );
    let (tool, reason, _) = server.stderr.stop(1).await;
    assert_eq!((tool.as_str(), reason.as_str()), ("spin", "Shutdown"));
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_the_jobs_and_the_server_over_stdio() {
    sigterm_stops_the_job_and_the_server(Server::stdio()).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_stops_the_jobs_and_the_server_over_http() {
    sigterm_stops_the_job_and_the_server(Server::http().await).await;
}

/// The sandbox: an endless rhai loop, stopped by the call's cancel; a finite script's value.
#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_sandbox_stops_the_interpreter() {
    let mut server = Server::stdio();
    let client = server.client().await;
    let value = client
        .call_tool(call(
            "sandbox",
            json!({"code": "let x = 0; for i in 0..1000 { x += i; } x"}),
        ))
        .await
        .unwrap();
    assert_eq!(value.content[0].as_text().unwrap().text, "499500");
    let peer = client.peer().clone();
    let task = tokio::spawn(async move {
        let _ = peer
            .call_tool(call("sandbox", json!({"code": "loop { }"})))
            .await;
    });
    until_running(&client, 1).await;
    task.abort();
    let (tool, reason, _) = server.stderr.stop(1).await;
    assert_eq!((tool.as_str(), reason.as_str()), ("sandbox", "Dropped"));
    until_running(&client, 0).await;
}

/// 200 calls at once, half of them cancelled: the cancelled stop, the others end `done`,
/// nothing is left running, and the server still answers.
#[tokio::test(flavor = "multi_thread")]
async fn two_hundred_calls_with_half_cancelled_leave_nothing_running() {
    let mut server = Server::stdio();
    let client = server.client().await;
    let mut kept = Vec::new();
    let mut cancelled = Vec::new();
    for n in 0..200 {
        let peer = client.peer().clone();
        let seconds = if n % 2 == 0 { 0.5 } else { 600.0 };
        let task = tokio::spawn(async move {
            peer.call_tool(call("spin", json!({"seconds": seconds})))
                .await
                .map(|result| result.content[0].as_text().unwrap().text.clone())
        });
        if n % 2 == 0 {
            kept.push(task);
        } else {
            cancelled.push(task);
        }
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    for task in &cancelled {
        task.abort();
    }
    for task in kept {
        let text = tokio::time::timeout(BOUND * 3, task)
            .await
            .expect("a kept call ends")
            .unwrap()
            .expect("a kept call succeeds");
        assert_eq!(text, "done");
    }
    until_running(&client, 0).await;
    let stops = server.stderr.stops();
    assert!(
        stops.len() <= 100,
        "{} jobs stopped, of 100 cancelled",
        stops.len()
    );
    assert!(stops.iter().all(|(_, reason, _)| reason == "Dropped"));
    assert_eq!(running(&client).await, 0);
}

/// Bad input: each is answered with an error, and a call running meanwhile is not disturbed.
#[tokio::test(flavor = "multi_thread")]
async fn bad_input_is_answered_with_an_error_while_other_calls_go_on() {
    let mut server = Server::stdio();
    let client = server.client().await;
    let peer = client.peer().clone();
    let running_call =
        tokio::spawn(async move { peer.call_tool(call("spin", json!({"seconds": 1.0}))).await });
    for (tool, arguments) in [
        ("no_such_tool", json!({})),
        ("spin", json!({"seconds": "ten"})),
        ("spin", json!({"seconds": -1})),
        ("spin", json!({"seconds": 1e12})),
        ("spin", json!({})),
        ("sandbox", json!({"code": 42})),
    ] {
        let answer = client.call_tool(call(tool, arguments.clone())).await;
        let refused = match &answer {
            Err(_) => true,
            Ok(result) => result.is_error == Some(true),
        };
        assert!(refused, "{tool} {arguments} was accepted: {answer:?}");
    }
    let done = running_call
        .await
        .unwrap()
        .expect("the running call ends well");
    assert_eq!(done.content[0].as_text().unwrap().text, "done");

    // Invalid JSON-RPC, written raw. A line that is not JSON at all is ignored (as every
    // official SDK does, rmcp answers nothing: there is no id to answer, and an answer could
    // start an error storm with a peer that echoes it); well-formed JSON that is no valid
    // message gets an `Invalid request` error; the server reads on either way.
    let mut raw = Server::stdio();
    let mut stdin = raw.child.stdin.take().unwrap();
    let mut stdout = BufReader::new(raw.child.stdout.take().unwrap()).lines();
    let init = handshake_and_spin();
    let handshake: Vec<&str> = init.lines().take(2).collect();
    stdin
        .write_all(format!("{}\n{}\n", handshake[0], handshake[1]).as_bytes())
        .await
        .unwrap();
    let first = stdout.next_line().await.unwrap().unwrap();
    assert!(first.contains("\"id\":1"), "{first}");
    stdin.write_all(b"{this is not json\n").await.unwrap();
    stdin
        .write_all(b"{\"jsonrpc\": \"2.0\", \"id\": 9, \"method\": 42}\n")
        .await
        .unwrap();
    let error = tokio::time::timeout(BOUND, stdout.next_line())
        .await
        .expect("an answer to the invalid request")
        .unwrap()
        .unwrap();
    assert!(
        error.contains("\"error\"") && error.contains("Invalid request"),
        "{error}"
    );
    stdin
        .write_all(
            format!(
                "{}\n",
                json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "spin", "arguments": {"seconds": 0}}})
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    let answer = tokio::time::timeout(BOUND, stdout.next_line())
        .await
        .expect("an answer after the bad line")
        .unwrap()
        .unwrap();
    assert!(
        answer.contains("\"id\":3") && answer.contains("done"),
        "{answer}"
    );
}

/// From the client's cancel to the native job's return: median and worst over 30 calls per
/// transport, printed (BENCHMARKS.md quotes them); bounded only loosely here.
#[tokio::test(flavor = "multi_thread")]
async fn cancel_to_return_is_measured() {
    let mut results = Vec::new();
    for http in [false, true] {
        let mut server = if http {
            Server::http().await
        } else {
            Server::stdio()
        };
        let client = server.client().await;
        let mut times = Vec::new();
        for n in 1..=30 {
            let task = long_spin(&client);
            until_running(&client, 1).await;
            let cancelled = monotonic_ns();
            task.abort();
            let (_, _, stopped) = server.stderr.stop(n).await;
            times.push(stopped.saturating_sub(cancelled) as f64 / 1e6);
            until_running(&client, 0).await;
        }
        times.sort_by(f64::total_cmp);
        let median = times[times.len() / 2];
        let worst = times[times.len() - 1];
        eprintln!(
            "mcp-rust cancel-to-return over {}: median {median:.3} ms, worst {worst:.3} ms ({} calls)",
            if http { "http" } else { "stdio" },
            times.len()
        );
        assert!(median < 100.0, "median {median} ms");
        results.push(format!(
            "{{\"language\": \"Rust\", \"sdk\": \"rmcp 3.11\", \"transport\": \"{}\", \
             \"build\": \"{}\", \"calls\": {}, \"median_ms\": {median:.3}, \"worst_ms\": {worst:.3}}}",
            if http { "streamable HTTP" } else { "stdio" },
            if cfg!(debug_assertions) { "debug" } else { "release" },
            times.len()
        ));
    }
    write_measurement("mcp-rust", &format!("[{}]\n", results.join(", ")));
}

/// Writes `json` to `target/tethered-bench/<name>.json`, where `BENCHMARKS.md`'s generator
/// (`crates/benchmarks/report.py`) reads it.
fn write_measurement(name: &str, json: &str) {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target"),
        PathBuf::from,
    );
    let dir = target.join("tethered-bench");
    std::fs::create_dir_all(&dir).expect("target/tethered-bench can be made");
    std::fs::write(dir.join(format!("{name}.json")), json).expect("the measurement is written");
}
