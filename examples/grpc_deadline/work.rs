//! The gRPC service of the `grpc_deadline` example, which its tests (`tests/grpc.rs`,
//! `tests/two_hosts.rs`) drive too: one service, `tethered.demo.Work`, in three modes.
//!
//! - `Tethered`: behind `RequestTokenLayer`, `Spin` runs a native loop as a child of the
//!   request's token, so the client's deadline (`grpc-timeout`), its cancel (a reset stream)
//!   and the server's shutdown stop it, each with its reason.
//! - `Naive`: a plain tonic server (which honours `grpc-timeout` by dropping the handler) whose
//!   `Spin` runs the loop with `spawn_blocking`: the client gets `DEADLINE_EXCEEDED`, the loop
//!   runs on until `StopNaive` cleans it up.
//! - `Relay`: `Spin` calls another server's `Spin` on the request's behalf, through
//!   `ClientTokenLayer`, so what is left of the deadline travels as `grpc-timeout`.
//!
//! The messages are derived with prost by hand (no protoc), and the service is written as
//! tonic's code generator would write it. A native loop reports its start and its stop as one
//! line each, `start <id> <monotonic ns> <grpc-timeout ms or ->` and
//! `stop <id> <reason> <monotonic ns> <grpc-timeout ms or ->`, on the machine's monotonic clock,
//! which processes in different network namespaces share.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tethered::{CancelReason, CancelToken, JobOptions};
use tethered_tokio::TokioSpawner;
use tethered_tower::{ClientTokenLayer, RequestToken, RequestTokenLayer, parse_grpc_timeout};
use tonic::body::Body;

use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status};
use tonic_prost::ProstCodec;
use tower::ServiceBuilder;

/// `Spin`'s request.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SpinRequest {
    /// Names the call in the reports.
    #[prost(uint64, tag = "1")]
    pub(crate) id: u64,
    /// The loop ends by itself after this long.
    #[prost(uint32, tag = "2")]
    pub(crate) max_ms: u32,
}

/// `Spin`'s reply.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct SpinReply {
    /// The loop's steps.
    #[prost(uint64, tag = "1")]
    pub(crate) steps: u64,
}

/// No fields.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct Empty {}

/// `Status`'s reply.
#[derive(Clone, PartialEq, prost::Message)]
pub(crate) struct StatusReply {
    /// Naive loops running now.
    #[prost(uint32, tag = "1")]
    pub(crate) naive_running: u32,
    /// Tethered loops running now.
    #[prost(uint32, tag = "2")]
    pub(crate) running: u32,
}

/// The service's name.
pub(crate) const SERVICE: &str = "tethered.demo.Work";

/// What a server does with `Spin`.
#[derive(Clone)]
pub(crate) enum Mode {
    /// A native loop, a child of the request's token.
    Tethered,
    /// `spawn_blocking`, and nothing reaches the loop.
    Naive,
    /// Calls `Spin` on the upstream server under the request's token.
    Relay(Channel),
}

/// Where the reports go: stdout in the example, a list in the tests.
pub(crate) type Report = Arc<dyn Fn(String) + Send + Sync>;

static RUNNING: AtomicUsize = AtomicUsize::new(0);
static NAIVE_RUNNING: AtomicUsize = AtomicUsize::new(0);
/// Bumped by `StopNaive`: every naive loop started before it returns.
static NAIVE_GENERATION: AtomicU64 = AtomicU64::new(0);

/// The machine's monotonic clock, in nanoseconds: comparable between processes, also across
/// network namespaces.
pub(crate) fn mono_ns() -> u64 {
    let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .expect("CLOCK_MONOTONIC is always there");
    u64::try_from(now.tv_sec()).unwrap_or(0) * 1_000_000_000
        + u64::try_from(now.tv_nsec()).unwrap_or(0)
}

/// A reason's short name in the reports: its variant's name (`Timeout`, `Dropped`, ...).
pub(crate) fn reason_name(reason: CancelReason) -> String {
    format!("{reason:?}")
}

/// The service.
#[derive(Clone)]
pub(crate) struct Work {
    mode: Mode,
    report: Report,
}

impl Work {
    /// A server of `mode` that reports to `report`.
    pub(crate) fn new(mode: Mode, report: Report) -> Work {
        Work { mode, report }
    }

    /// Serves on `listener` until `shutdown` completes: behind `RequestTokenLayer` (children of
    /// `server`), unless the mode is `Naive`.
    pub(crate) async fn serve(
        self,
        listener: tokio::net::TcpListener,
        server: CancelToken,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), tonic::transport::Error> {
        let incoming = tonic::transport::server::TcpIncoming::from(listener);
        if matches!(self.mode, Mode::Naive) {
            tonic::transport::Server::builder()
                .add_service(self)
                .serve_with_incoming_shutdown(incoming, shutdown)
                .await
        } else {
            tonic::transport::Server::builder()
                .layer(RequestTokenLayer::new(&server))
                .add_service(self)
                .serve_with_incoming_shutdown(incoming, shutdown)
                .await
        }
    }

    async fn spin(
        &self,
        request: Request<SpinRequest>,
        header: Option<Duration>,
    ) -> Result<Response<SpinReply>, Status> {
        match &self.mode {
            Mode::Tethered => self.spin_tethered(request, header).await,
            Mode::Naive => spin_naive(request).await,
            Mode::Relay(upstream) => relay(upstream.clone(), request).await,
        }
    }

    async fn spin_tethered(
        &self,
        request: Request<SpinRequest>,
        header: Option<Duration>,
    ) -> Result<Response<SpinReply>, Status> {
        let token =
            RequestToken::from_tonic(&request).map_err(|err| Status::internal(err.to_string()))?;
        let SpinRequest { id, max_ms } = request.into_inner();
        let report = self.report.clone();
        let header = header.map_or("-".to_owned(), |d| d.as_millis().to_string());
        let options = JobOptions::new()
            .name(format!("spin-{id}"))
            .child_of(&token) // stops with the request, with its reason
            .on(TokioSpawner::current());
        let job = tethered::spawn(options, move |token| {
            report(format!("start {id} {} {header}", mono_ns()));
            let steps = spin_until(&token, Duration::from_millis(u64::from(max_ms)));
            if let Some(reason) = token.reason() {
                report(format!(
                    "stop {id} {} {} {header}",
                    reason_name(reason),
                    mono_ns()
                ));
            }
            steps
        })
        .map_err(|err| Status::unavailable(err.to_string()))?;
        match job.await {
            Ok(steps) => Ok(Response::new(SpinReply { steps })),
            Err(stopped) => Err(Status::cancelled(stopped.to_string())),
        }
    }
}

/// The native loop: busy until `token` is cancelled or `max` has passed.
fn spin_until(token: &CancelToken, max: Duration) -> u64 {
    RUNNING.fetch_add(1, Ordering::SeqCst);
    let steps = busy(max, || !token.is_cancelled());
    RUNNING.fetch_sub(1, Ordering::SeqCst);
    steps
}

/// Busy while `go_on()` holds (asked every step) and `max` has not passed; the steps taken.
fn busy(max: Duration, go_on: impl Fn() -> bool) -> u64 {
    let started = Instant::now();
    let mut steps = 0u64;
    while go_on() && (!steps.is_multiple_of(4096) || started.elapsed() < max) {
        steps += 1;
        std::hint::black_box(steps);
    }
    steps
}

/// The naive handler: `spawn_blocking`, which nothing stops once it runs.
async fn spin_naive(request: Request<SpinRequest>) -> Result<Response<SpinReply>, Status> {
    let max = Duration::from_millis(u64::from(request.into_inner().max_ms));
    // ORDERING: Relaxed: the clean-up only needs the loop to see the bump soon.
    let generation = NAIVE_GENERATION.load(Ordering::Relaxed);
    let steps = tokio::task::spawn_blocking(move || {
        NAIVE_RUNNING.fetch_add(1, Ordering::SeqCst);
        let steps = busy(max, || {
            NAIVE_GENERATION.load(Ordering::Relaxed) == generation
        });
        NAIVE_RUNNING.fetch_sub(1, Ordering::SeqCst);
        steps
    })
    .await
    .map_err(|err| Status::internal(err.to_string()))?;
    Ok(Response::new(SpinReply { steps }))
}

/// The relay: the upstream's `Spin`, called under this request's token.
async fn relay(
    upstream: Channel,
    request: Request<SpinRequest>,
) -> Result<Response<SpinReply>, Status> {
    let token =
        RequestToken::from_tonic(&request).map_err(|err| Status::internal(err.to_string()))?;
    let reply = call_spin(upstream, request.into_inner(), None, Some(token)).await?;
    Ok(Response::new(reply))
}

/// Connects to `addr` (`host:port`).
pub(crate) async fn connect(addr: &str) -> Result<Channel, tonic::transport::Error> {
    Endpoint::from_shared(format!("http://{addr}"))?
        .connect()
        .await
}

/// Calls `Spin` with an optional deadline (`grpc-timeout`) and an optional token (through
/// `ClientTokenLayer`: its deadline travels, and its cancel stops the call).
pub(crate) async fn call_spin(
    channel: Channel,
    message: SpinRequest,
    deadline: Option<Duration>,
    token: Option<CancelToken>,
) -> Result<SpinReply, Status> {
    let mut request = Request::new(message);
    if let Some(deadline) = deadline {
        request.set_timeout(deadline);
    }
    if let Some(token) = token {
        request.extensions_mut().insert(RequestToken::new(token));
    }
    let reply = unary(channel, "Spin", request).await?;
    Ok(reply)
}

/// The counts of a server's running loops.
pub(crate) async fn status(channel: Channel) -> Result<StatusReply, Status> {
    unary(channel, "Status", Request::new(Empty {})).await
}

/// Ends a server's naive loops.
pub(crate) async fn stop_naive(channel: Channel) -> Result<(), Status> {
    unary::<Empty, Empty>(channel, "StopNaive", Request::new(Empty {}))
        .await
        .map(drop)
}

async fn unary<M1, M2>(channel: Channel, method: &str, request: Request<M1>) -> Result<M2, Status>
where
    M1: prost::Message + Send + Sync + 'static,
    M2: prost::Message + Default + Send + Sync + 'static,
{
    let service = ServiceBuilder::new()
        .layer(ClientTokenLayer::new())
        .service(channel);
    let mut client = tonic::client::Grpc::new(service);
    client
        .ready()
        .await
        .map_err(|err| Status::unavailable(err.to_string()))?;
    let path = format!("/{SERVICE}/{method}")
        .parse()
        .expect("a valid path");
    match client
        .unary(request, path, ProstCodec::<M1, M2>::default())
        .await
    {
        Ok(response) => Ok(response.into_inner()),
        Err(status) => Err(status),
    }
}

impl tonic::server::NamedService for Work {
    const NAME: &'static str = SERVICE;
}

impl tower::Service<http::Request<Body>> for Work {
    type Response = http::Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<http::Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        let work = self.clone();
        Box::pin(async move {
            let method = request
                .uri()
                .path()
                .rsplit('/')
                .next()
                .unwrap_or("")
                .to_owned();
            // A malformed `grpc-timeout` is refused, as `RequestTokenLayer` refuses it in front
            // of the tethered modes: a deadline the caller meant is never silently dropped.
            let header = match parse_grpc_timeout(request.headers()) {
                Ok(header) => header,
                Err(err) => return Ok(Status::invalid_argument(err.to_string()).into_http()),
            };
            let response = match method.as_str() {
                "Spin" => {
                    let handler = tower::service_fn(move |request: Request<SpinRequest>| {
                        let work = work.clone();
                        async move { work.spin(request, header).await }
                    });
                    tonic::server::Grpc::new(ProstCodec::<SpinReply, SpinRequest>::default())
                        .unary(handler, request)
                        .await
                }
                "Status" => {
                    let handler = tower::service_fn(|_: Request<Empty>| async {
                        let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
                        Ok::<_, Status>(Response::new(StatusReply {
                            naive_running: count(NAIVE_RUNNING.load(Ordering::SeqCst)),
                            running: count(RUNNING.load(Ordering::SeqCst)),
                        }))
                    });
                    tonic::server::Grpc::new(ProstCodec::<StatusReply, Empty>::default())
                        .unary(handler, request)
                        .await
                }
                "StopNaive" => {
                    let handler = tower::service_fn(|_: Request<Empty>| async {
                        NAIVE_GENERATION.fetch_add(1, Ordering::Relaxed);
                        Ok::<_, Status>(Response::new(Empty {}))
                    });
                    tonic::server::Grpc::new(ProstCodec::<Empty, Empty>::default())
                        .unary(handler, request)
                        .await
                }
                _ => Status::unimplemented(format!("no method {method}")).into_http(),
            };
            Ok(response)
        })
    }
}
