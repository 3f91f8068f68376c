//! A real axum server on loopback, real clients: a disconnect, a configured timeout, a
//! `grpc-timeout` header, the server's shutdown and an HTTP/2 reset each stop the request's
//! native job, with their reason, and the response to a deadline comes at the deadline. A
//! disconnect while a body streams stops the work still producing it; a malformed
//! `grpc-timeout` is refused with a message naming the header; the layer's own answers say why
//! in plain text.

#![cfg(feature = "axum")]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use http_body::Frame;
use http_body_util::{BodyExt, Empty, StreamBody};
use hyper::body::Bytes;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tethered::{CancelReason, CancelSource, JobOptions};
use tethered_tower::{RequestToken, RequestTokenLayer};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

/// Far above what anything here needs on an idle machine.
const SLACK: Duration = Duration::from_secs(10);

/// What the request's native job reports when it returns: the reason of the request's token
/// (the layer's), and when.
type Reports = mpsc::Sender<(Option<CancelReason>, Instant)>;

#[derive(Clone)]
struct App {
    reports: std::sync::Arc<std::sync::Mutex<Reports>>,
    started: std::sync::Arc<std::sync::Mutex<mpsc::Sender<()>>>,
}

/// Spins until its token is cancelled (`/spin`), or sleeps 1.5 s without looking (`/deaf`).
/// The job is detached when the handler goes, so it reports what the request's token said.
async fn spin(State(app): State<App>, token: RequestToken) -> String {
    run(app, token, false).await
}

async fn deaf(State(app): State<App>, token: RequestToken) -> String {
    run(app, token, true).await
}

async fn run(app: App, token: RequestToken, deaf: bool) -> String {
    let reports = app.reports.lock().unwrap().clone();
    let started = app.started.lock().unwrap().clone();
    let request = token.clone().into_token();
    let job = tethered_tokio::spawn_native_with(JobOptions::new().child_of(&token), move |token| {
        let _ = started.send(());
        if deaf {
            std::thread::sleep(Duration::from_millis(1500));
        } else {
            while !token.is_cancelled() {
                std::hint::spin_loop();
            }
        }
        // The request's token, not the job's: dropping the handler cancels the job's own
        // token with `Dropped` whatever the layer does; the request's reason is the layer's.
        let _ = reports.send((request.reason(), Instant::now()));
        "done"
    })
    .expect("on the runtime");
    job.await.unwrap_or("stopped").to_owned()
}

/// Streams chunks that a native job makes until the request's token is cancelled: the job
/// looks only at its token (a full or closed channel does not stop it), so only the layer can
/// stop it once the headers are out.
async fn stream(State(app): State<App>, token: RequestToken) -> axum::response::Response {
    let reports = app.reports.lock().unwrap().clone();
    let started = app.started.lock().unwrap().clone();
    let request = token.clone().into_token();
    let (chunks_tx, chunks) = tokio::sync::mpsc::channel::<Bytes>(4);
    tethered_tokio::spawn_native_with(JobOptions::new().child_of(&token), move |token| {
        let _ = started.send(());
        while !token.is_cancelled() {
            let _ = chunks_tx.try_send(Bytes::from_static(b"tick\n"));
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = reports.send((request.reason(), Instant::now()));
    })
    .expect("on the runtime")
    .detach();
    let frames = futures_util::stream::unfold(chunks, |mut chunks| async move {
        chunks.recv().await.map(|chunk| {
            (
                Ok::<_, std::convert::Infallible>(Frame::data(chunk)),
                chunks,
            )
        })
    });
    axum::response::Response::new(axum::body::Body::new(StreamBody::new(frames)))
}

struct Server {
    address: std::net::SocketAddr,
    shutdown: CancelSource,
    reports: mpsc::Receiver<(Option<CancelReason>, Instant)>,
    started: mpsc::Receiver<()>,
}

async fn serve(layer: impl Fn(&CancelSource) -> RequestTokenLayer) -> Server {
    let shutdown = CancelSource::new();
    let (reports_tx, reports) = mpsc::channel();
    let (started_tx, started) = mpsc::channel();
    let app = App {
        reports: std::sync::Arc::new(std::sync::Mutex::new(reports_tx)),
        started: std::sync::Arc::new(std::sync::Mutex::new(started_tx)),
    };
    let router = Router::new()
        .route("/spin", get(spin))
        .route("/deaf", get(deaf))
        .route("/stream", get(stream))
        .route("/plain", get(|| async { "no layer here" }))
        .with_state(app)
        .layer(layer(&shutdown));
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let address = listener.local_addr().expect("its address");
    tokio::spawn(async move {
        axum::serve(listener, router)
            .await
            .expect("the server runs");
    });
    Server {
        address,
        shutdown,
        reports,
        started,
    }
}

impl Server {
    fn started(&self) {
        self.started.recv_timeout(SLACK).expect("the job started");
    }

    fn report(&self) -> (Option<CancelReason>, Instant) {
        self.reports.recv_timeout(SLACK).expect("the job returned")
    }
}

/// An HTTP/1.1 request; the response's status, headers, and when it came.
async fn get_http1(
    address: std::net::SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (http::StatusCode, http::HeaderMap, Instant) {
    let (status, headers, at, _) = get_http1_text(address, path, headers).await;
    (status, headers, at)
}

/// [`get_http1`], with the body as text.
async fn get_http1_text(
    address: std::net::SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (http::StatusCode, http::HeaderMap, Instant, String) {
    let stream = TcpStream::connect(address).await.expect("connects");
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let mut request = http::Request::get(path).header("host", "localhost");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = sender
        .send_request(request.body(Empty::<Bytes>::new()).unwrap())
        .await
        .expect("a response");
    let at = Instant::now();
    let (parts, body) = response.into_parts();
    let body = body
        .collect()
        .await
        .map(|body| body.to_bytes())
        .unwrap_or_default();
    (
        parts.status,
        parts.headers,
        at,
        String::from_utf8_lossy(&body).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_stops_the_job_with_dropped() {
    let server = serve(|shutdown| RequestTokenLayer::new(&shutdown.token())).await;
    let mut stream = TcpStream::connect(server.address).await.unwrap();
    stream
        .write_all(b"GET /spin HTTP/1.1\r\nhost: localhost\r\n\r\n")
        .await
        .unwrap();
    let server = tokio::task::spawn_blocking(move || {
        server.started();
        server
    })
    .await
    .unwrap();
    let gone = Instant::now();
    drop(stream);
    let (reason, at) = tokio::task::spawn_blocking(move || server.report())
        .await
        .unwrap();
    assert_eq!(reason, Some(CancelReason::Dropped));
    assert!(at.duration_since(gone) < SLACK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configured_timeout_answers_504_at_the_deadline_and_stops_the_job_with_timeout() {
    let server = serve(|shutdown| {
        RequestTokenLayer::new(&shutdown.token()).timeout(Duration::from_millis(200))
    })
    .await;
    let sent = Instant::now();
    let (status, headers, answered, body) = get_http1_text(server.address, "/deaf", &[]).await;
    assert_eq!(status, http::StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(body, "the request was stopped: the deadline passed\n");
    assert_eq!(
        headers.get("content-type").unwrap(),
        "text/plain; charset=utf-8"
    );
    // At the deadline, not when the deaf job returns 1.5 s later.
    let took = answered.duration_since(sent);
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_millis(1200),
        "{took:?}"
    );
    let (reason, _) = tokio::task::spawn_blocking(move || server.report())
        .await
        .unwrap();
    assert_eq!(reason, Some(CancelReason::Timeout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grpc_timeout_header_shorter_than_the_configured_one_wins_and_answers_deadline_exceeded()
{
    let server = serve(|shutdown| {
        RequestTokenLayer::new(&shutdown.token()).timeout(Duration::from_secs(30))
    })
    .await;
    let sent = Instant::now();
    let (status, headers, answered) = get_http1(
        server.address,
        "/spin",
        &[
            ("content-type", "application/grpc"),
            ("grpc-timeout", "100m"),
        ],
    )
    .await;
    assert_eq!(status, http::StatusCode::OK);
    assert_eq!(headers.get("grpc-status").unwrap(), "4");
    assert!(answered.duration_since(sent) < Duration::from_secs(5));
    let (reason, _) = tokio::task::spawn_blocking(move || server.report())
        .await
        .unwrap();
    assert_eq!(reason, Some(CancelReason::Timeout));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_shutdown_stops_the_job_with_shutdown_and_answers_503() {
    let server = serve(|shutdown| RequestTokenLayer::new(&shutdown.token())).await;
    let address = server.address;
    let request = tokio::spawn(async move { get_http1_text(address, "/spin", &[]).await });
    let server = tokio::task::spawn_blocking(move || {
        server.started();
        server
    })
    .await
    .unwrap();
    server.shutdown.cancel(CancelReason::Shutdown);
    let (status, _, _, body) = request.await.unwrap();
    assert_eq!(status, http::StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        body,
        "the request was stopped: its owner is shutting down\n"
    );
    let (reason, _) = tokio::task::spawn_blocking(move || server.report())
        .await
        .unwrap();
    assert_eq!(reason, Some(CancelReason::Shutdown));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http2_stream_reset_stops_the_job_with_dropped() {
    let server = serve(|shutdown| RequestTokenLayer::new(&shutdown.token())).await;
    let stream = TcpStream::connect(server.address).await.unwrap();
    let (mut sender, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .expect("an HTTP/2 connection");
    tokio::spawn(connection);
    let request = http::Request::get("http://localhost/spin")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = tokio::spawn(async move { sender.send_request(request).await });
    let server = tokio::task::spawn_blocking(move || {
        server.started();
        server
    })
    .await
    .unwrap();
    // Dropping the response future resets the stream (RST_STREAM); the connection stays.
    response.abort();
    let (reason, _) = tokio::task::spawn_blocking(move || server.report())
        .await
        .unwrap();
    assert_eq!(reason, Some(CancelReason::Dropped));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_extractor_without_the_layer_is_a_clear_500() {
    let router: Router = Router::new().route("/", get(|_token: RequestToken| async { "never" }));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await });
    let (status, _, _) = get_http1(address, "/", &[]).await;
    assert_eq!(status, http::StatusCode::INTERNAL_SERVER_ERROR);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_while_the_body_streams_stops_the_work_with_dropped() {
    let server = serve(|shutdown| RequestTokenLayer::new(&shutdown.token())).await;
    let stream = TcpStream::connect(server.address).await.unwrap();
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .expect("handshake");
    let connection = tokio::spawn(connection);
    let request = http::Request::get("/stream")
        .header("host", "localhost")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(request).await.expect("the headers");
    assert_eq!(response.status(), http::StatusCode::OK);
    let mut body = response.into_body();
    // A first chunk: the headers are out and the body streams.
    let first = body.frame().await.expect("a chunk").expect("no error");
    assert_eq!(first.into_data().unwrap(), Bytes::from_static(b"tick\n"));
    // The client goes away mid-stream.
    drop(body);
    drop(sender);
    connection.abort();
    let gone = Instant::now();
    let (reason, at) = tokio::task::spawn_blocking(move || server.report())
        .await
        .unwrap();
    assert_eq!(reason, Some(CancelReason::Dropped));
    assert!(at.duration_since(gone) < SLACK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_grpc_timeout_is_refused_with_a_message_that_names_the_header() {
    let server = serve(|shutdown| RequestTokenLayer::new(&shutdown.token())).await;
    let (status, _, _, body) =
        get_http1_text(server.address, "/spin", &[("grpc-timeout", "soon")]).await;
    assert_eq!(status, http::StatusCode::BAD_REQUEST);
    assert!(
        body.starts_with("invalid grpc-timeout header \"soon\""),
        "{body}"
    );
    let (status, headers, _, _) = get_http1_text(
        server.address,
        "/spin",
        &[
            ("content-type", "application/grpc"),
            ("grpc-timeout", "1.5S"),
        ],
    )
    .await;
    assert_eq!(status, http::StatusCode::OK);
    assert_eq!(headers.get("grpc-status").unwrap(), "3", "INVALID_ARGUMENT");
    let message = headers.get("grpc-message").unwrap().to_str().unwrap();
    assert!(
        message.starts_with("invalid grpc-timeout header"),
        "{message}"
    );
    // The handler never ran.
    assert!(server.started.try_recv().is_err());
}

/// A response read to its end leaves the request's token as it was: hyper drops a body whose
/// `is_end_stream` says it is done without polling it to its end, and that drop is no hang-up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_response_read_to_its_end_cancels_nothing() {
    use tokio::io::AsyncReadExt;

    let kept = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let shutdown = CancelSource::new();
    let router = Router::new()
        .route(
            "/ok",
            get({
                let kept = kept.clone();
                move |token: RequestToken| async move {
                    kept.lock().unwrap().push(token.into_token());
                    "ok"
                }
            }),
        )
        .route(
            "/empty",
            get({
                let kept = kept.clone();
                move |token: RequestToken| async move {
                    kept.lock().unwrap().push(token.into_token());
                }
            }),
        )
        .layer(RequestTokenLayer::new(&shutdown.token()));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });

    let mut client = TcpStream::connect(address).await.unwrap();
    for (path, end) in [("/ok", &b"\r\n\r\nok"[..]), ("/empty", &b"\r\n\r\n"[..])] {
        for _ in 0..3 {
            let request = format!("GET {path} HTTP/1.1\r\nhost: test\r\n\r\n");
            client.write_all(request.as_bytes()).await.unwrap();
            let mut answer = Vec::new();
            while !answer.ends_with(end) {
                let mut byte = [0u8; 1];
                assert_eq!(client.read(&mut byte).await.unwrap(), 1, "{answer:?}");
                answer.push(byte[0]);
            }
        }
    }
    // Whatever the server does with a finished body, it has done it well before this.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let kept = kept.lock().unwrap();
    assert_eq!(kept.len(), 6);
    for token in kept.iter() {
        assert_eq!(
            token.reason(),
            None,
            "a finished response cancelled its request"
        );
    }
}
