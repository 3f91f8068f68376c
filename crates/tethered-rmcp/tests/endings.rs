//! Every way a tool call ends stops its native job, read from inside the job (its reason and
//! cause) and from the client (the answer it gets, if any): over an in-process byte stream
//! (stdio's transport) and over streamable HTTP, with rmcp's own client.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolRequestParams, ServerCapabilities, ServerConfig};
use rmcp::service::RunningService;
use rmcp::transport::{IntoTransport, StreamableHttpClientTransport, StreamableHttpServerConfig};
use rmcp::{
    RoleClient, RoleServer, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router,
};
use serde_json::json;
use tethered::{CancelReason, CancelSource};
use tethered_rmcp::{CallStopped, Tethered, ToolCall, ToolJobs};

/// Far above what a step needs; a step that takes this long has failed.
const BOUND: Duration = Duration::from_secs(10);

/// How many jobs started, and what each stopped job saw: its reason and its cause's text.
#[derive(Clone, Default)]
struct Stops {
    started: Arc<std::sync::atomic::AtomicUsize>,
    seen: Arc<Mutex<Vec<Stop>>>,
}

/// A stopped job's reason and its cause's text.
type Stop = (CancelReason, Option<String>);

#[derive(Clone)]
struct Tools {
    tool_router: ToolRouter<Self>,
    stops: Stops,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Spin {
    /// How long, in seconds; a negative number panics.
    seconds: f64,
}

#[tool_router]
impl Tools {
    fn new(stops: &Stops) -> Tools {
        Tools {
            tool_router: Self::tool_router(),
            stops: stops.clone(),
        }
    }

    #[tool(description = "Spins for `seconds`.")]
    async fn spin(
        &self,
        Parameters(Spin { seconds }): Parameters<Spin>,
        call: ToolCall,
    ) -> Result<String, CallStopped> {
        let stops = self.stops.clone();
        call.run(move |token| {
            stops
                .started
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            assert!(seconds >= 0.0, "a negative spin");
            let until = Instant::now() + Duration::from_secs_f64(seconds);
            while Instant::now() < until {
                if let Some(reason) = token.reason() {
                    let cause = token.cause().map(|cause| cause.to_string());
                    stops.seen.lock().unwrap().push((reason, cause));
                    return "stopped".to_owned();
                }
                std::hint::spin_loop();
            }
            "done".to_owned()
        })
        .await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

type Client = RunningService<RoleClient, ()>;

fn spin(seconds: f64) -> CallToolRequestParams {
    CallToolRequestParams::new("spin")
        .with_arguments(json!({ "seconds": seconds }).as_object().unwrap().clone())
}

/// Waits for the `n`-th stop.
async fn stop(stops: &Stops, n: usize) -> Stop {
    let until = Instant::now() + BOUND;
    loop {
        if let Some(stop) = stops.seen.lock().unwrap().get(n - 1) {
            return stop.clone();
        }
        assert!(Instant::now() < until, "the job did not stop");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A server over an in-process byte stream (as stdio), and rmcp's client on its other end.
async fn over_a_stream(jobs: &ToolJobs, stops: &Stops) -> Client {
    let (server_end, client_end) = tokio::io::duplex(64 * 1024);
    let transport = Tethered::new(
        IntoTransport::<RoleServer, std::io::Error, _>::into_transport(tokio::io::split(
            server_end,
        )),
        jobs,
    );
    let tools = Tools::new(stops);
    tokio::spawn(async move {
        if let Ok(service) = tools.serve(transport).await {
            let _ = service.waiting().await;
        }
    });
    ().serve(tokio::io::split(client_end)).await.unwrap()
}

/// Until the `n`-th job of the tool runs.
async fn started(stops: &Stops, n: usize) {
    let until = Instant::now() + BOUND;
    while stops.started.load(std::sync::atomic::Ordering::SeqCst) < n {
        assert!(Instant::now() < until, "the job never ran");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clients_cancel_stops_the_job_with_its_reason_as_the_cause() {
    let (server, stops) = (CancelSource::new(), Stops::default());
    let client = over_a_stream(&ToolJobs::new(&server.token()), &stops).await;
    let peer = client.peer().clone();
    let call = tokio::spawn(async move { peer.call_tool(spin(600.0)).await });
    started(&stops, 1).await;
    call.abort(); // rmcp's client sends notifications/cancelled
    let (reason, cause) = stop(&stops, 1).await;
    assert_eq!(reason, CancelReason::Dropped);
    let cause = cause.unwrap();
    assert!(
        cause.starts_with("the client cancelled the call"),
        "{cause}"
    );
    // The server goes on serving.
    let done = client.call_tool(spin(0.001)).await.unwrap();
    assert_eq!(done.content[0].as_text().unwrap().text, "done");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_end_of_the_input_stops_the_job_at_once() {
    let (server, stops) = (CancelSource::new(), Stops::default());
    let client = over_a_stream(&ToolJobs::new(&server.token()), &stops).await;
    let peer = client.peer().clone();
    let _call = tokio::spawn(async move { peer.call_tool(spin(600.0)).await });
    started(&stops, 1).await;
    let closed = Instant::now();
    client.cancel().await.unwrap();
    let (reason, cause) = stop(&stops, 1).await;
    assert_eq!(reason, CancelReason::Dropped);
    assert_eq!(cause.as_deref(), Some("the client closed the connection"));
    // rmcp alone lets a call run 5 s past the end of its input.
    assert!(
        closed.elapsed() < Duration::from_secs(2),
        "{:?}",
        closed.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_shutdown_stops_the_job_and_answers_that_the_server_shuts_down() {
    let (server, stops) = (CancelSource::new(), Stops::default());
    let client = over_a_stream(&ToolJobs::new(&server.token()), &stops).await;
    let peer = client.peer().clone();
    let call = tokio::spawn(async move { peer.call_tool(spin(600.0)).await });
    started(&stops, 1).await;
    server.cancel(CancelReason::Shutdown);
    let (reason, _) = stop(&stops, 1).await;
    assert_eq!(reason, CancelReason::Shutdown);
    let answer = tokio::time::timeout(BOUND, call)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(answer.is_error, Some(true));
    assert_eq!(
        answer.content[0].as_text().unwrap().text,
        "server shutting down: the call was stopped; try again later"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_servers_limit_stops_the_job_and_answers_that_it_timed_out() {
    let (server, stops) = (CancelSource::new(), Stops::default());
    let jobs = ToolJobs::new(&server.token()).timeout(Duration::from_millis(100));
    let client = over_a_stream(&jobs, &stops).await;
    let answer = client.call_tool(spin(600.0)).await.unwrap();
    assert_eq!(answer.is_error, Some(true));
    assert_eq!(
        answer.content[0].as_text().unwrap().text,
        "timed out: the call took longer than the server allows"
    );
    assert_eq!(stop(&stops, 1).await.0, CancelReason::Timeout);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_job_that_panics_answers_a_tool_error_and_the_server_goes_on() {
    let (server, stops) = (CancelSource::new(), Stops::default());
    let client = over_a_stream(&ToolJobs::new(&server.token()), &stops).await;
    let answer = client.call_tool(spin(-1.0)).await.unwrap();
    assert_eq!(answer.is_error, Some(true));
    assert_eq!(
        answer.content[0].as_text().unwrap().text,
        "the tool failed: it panicked (a negative spin)"
    );
    let done = client.call_tool(spin(0.001)).await.unwrap();
    assert_eq!(done.content[0].as_text().unwrap().text, "done");
}

/// The server over streamable HTTP on a free port: its URL.
async fn over_http(jobs: &ToolJobs, stops: &Stops, sessions: bool) -> String {
    let stops = stops.clone();
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(sessions)
        .with_sse_keep_alive(Some(Duration::from_millis(200)));
    let mcp = tethered_rmcp::streamable_http(move || Ok(Tools::new(&stops)), jobs, config);
    let app = axum::Router::new().nest_service("/mcp", mcp);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

#[tokio::test(flavor = "multi_thread")]
async fn a_closed_session_stops_its_jobs_at_once() {
    let (server, stops) = (CancelSource::new(), Stops::default());
    let url = over_http(&ToolJobs::new(&server.token()), &stops, true).await;
    let client = ().serve(StreamableHttpClientTransport::from_uri(url)).await.unwrap();
    let peer = client.peer().clone();
    let _call = tokio::spawn(async move { peer.call_tool(spin(600.0)).await });
    started(&stops, 1).await;
    let closed = Instant::now();
    client.cancel().await.unwrap(); // rmcp's client sends DELETE
    let (reason, _) = stop(&stops, 1).await;
    assert_eq!(reason, CancelReason::Dropped);
    // rmcp alone lets the session's calls run 5 s past its close.
    assert!(
        closed.elapsed() < Duration::from_secs(2),
        "{:?}",
        closed.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cancelled_call_stops_over_http_with_and_without_sessions() {
    for sessions in [true, false] {
        let (server, stops) = (CancelSource::new(), Stops::default());
        let url = over_http(&ToolJobs::new(&server.token()), &stops, sessions).await;
        let client = ().serve(StreamableHttpClientTransport::from_uri(url)).await.unwrap();
        let peer = client.peer().clone();
        let call = tokio::spawn(async move { peer.call_tool(spin(600.0)).await });
        started(&stops, 1).await;
        call.abort();
        let (reason, _) = stop(&stops, 1).await;
        assert_eq!(reason, CancelReason::Dropped, "sessions: {sessions}");
        let done = client.call_tool(spin(0.001)).await.unwrap();
        assert_eq!(done.content[0].as_text().unwrap().text, "done");
        // A shutdown answers the calls it stops, and ends the sessions.
        let peer = client.peer().clone();
        let call = tokio::spawn(async move { peer.call_tool(spin(600.0)).await });
        started(&stops, 3).await;
        server.cancel(CancelReason::Shutdown);
        assert_eq!(stop(&stops, 2).await.0, CancelReason::Shutdown);
        // The call the shutdown stopped is answered on its stream, which the shutdown lets
        // finish.
        let answer = tokio::time::timeout(BOUND, call)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(answer.is_error, Some(true), "sessions: {sessions}");
        assert_eq!(
            answer.content[0].as_text().unwrap().text,
            "server shutting down: the call was stopped; try again later"
        );
    }
}
