//! [`RequestTokenLayer`] and the service it makes, [`RequestTokenService`].

use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::{Request, Response};
use tethered::{CancelSource, CancelToken};
use tower_layer::Layer;
use tower_service::Service;

use crate::body::TokenBody;
use crate::deadline::parse_grpc_timeout;
use crate::future::{Answer, Protocol, ResponseFuture};
use crate::token::RequestToken;

/// A tower layer that gives every request a [`CancelToken`] (as a [`RequestToken`] in its
/// extensions), a child of the server's token, cancelled:
///
/// - with `Dropped` when the response future is dropped: the client disconnected, an HTTP/2
///   stream was reset, middleware lost a race;
/// - with `Timeout` at the request's deadline: its `grpc-timeout` header, the layer's
///   [`timeout`](Self::timeout), the shorter of the two. The response comes at the deadline,
///   not when the native work returns: gRPC's `DEADLINE_EXCEEDED` for a gRPC request (by its
///   `content-type`), HTTP 504 otherwise. tonic's server runs its own deadline from the same
///   header, outside the layer, and may answer first, with `CANCELLED` ("Timeout expired"),
///   and a tonic client resets its call at its deadline, which started earlier: a response
///   future dropped within 50 ms of its deadline cancels the token with `Timeout` too;
/// - with the server token's reason (`Shutdown`, say) when it is cancelled; the response, if
///   the handler has not answered, is gRPC's `UNAVAILABLE` or HTTP 503.
///
/// Jobs the handler spawns as children of the request's token get the reason. The layer's own
/// answers carry a short plain-text reason (`the request was stopped: the deadline passed`),
/// or for gRPC, the status and that reason in `grpc-message`. A request whose `grpc-timeout`
/// header is malformed is answered at once, without calling the handler: HTTP 400 or gRPC's
/// `INVALID_ARGUMENT`, with a message that names the header.
///
/// The response's body ([`TokenBody`]) holds the request's token until its last byte is out:
/// a client that disconnects while a body streams cancels the token with `Dropped`, so the
/// work still producing the stream stops.
///
/// ```
/// # #[cfg(feature = "axum")] {
/// use std::time::Duration;
/// use axum::{Router, routing::get};
/// use tethered::{CancelSource, JobOptions};
/// use tethered_tower::{RequestToken, RequestTokenLayer};
///
/// async fn render(token: RequestToken) -> String {
///     let job = tethered_tokio::spawn_native_with(JobOptions::new().child_of(&token), |token| {
///         // ... native work that checks `token` ...
///         "done"
///     })
///     .expect("the runtime runs");
///     job.await.unwrap_or("stopped").to_owned()
/// }
///
/// let server = CancelSource::new(); // cancel it with `Shutdown` to stop every request
/// let app: Router = Router::new()
///     .route("/render", get(render))
///     .layer(RequestTokenLayer::new(&server.token()).timeout(Duration::from_secs(10)));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct RequestTokenLayer {
    server: CancelToken,
    timeout: Option<Duration>,
    cut_streams: bool,
}

impl RequestTokenLayer {
    /// Every request's token is a child of `server`.
    pub fn new(server: &CancelToken) -> Self {
        RequestTokenLayer {
            server: server.clone(),
            timeout: None,
            cut_streams: true,
        }
    }

    /// A deadline for every request, `timeout` after it arrives (a request's shorter
    /// `grpc-timeout` wins).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Lets a response stream that is already being sent finish, whatever stops its request
    /// (the deadline, the server's shutdown): the service ends the stream itself, having
    /// answered the work the stop ended. By default such a stream is cut short with an error,
    /// so that a client never takes it for a whole one. For a protocol whose streams carry the
    /// answer to a stop (an MCP server answers each call a shutdown stopped on the call's
    /// stream). A client that goes away still cancels the request with `Dropped`.
    ///
    /// ```
    /// use tethered::CancelSource;
    /// use tethered_tower::RequestTokenLayer;
    ///
    /// let server = CancelSource::new();
    /// let layer = RequestTokenLayer::new(&server.token()).let_streams_finish();
    /// # drop(layer);
    /// ```
    pub fn let_streams_finish(mut self) -> Self {
        self.cut_streams = false;
        self
    }
}

impl<S> Layer<S> for RequestTokenLayer {
    type Service = RequestTokenService<S>;

    fn layer(&self, inner: S) -> RequestTokenService<S> {
        RequestTokenService {
            inner,
            server: self.server.clone(),
            timeout: self.timeout,
            cut_streams: self.cut_streams,
        }
    }
}

/// The service [`RequestTokenLayer`] wraps around another.
#[derive(Clone, Debug)]
pub struct RequestTokenService<S> {
    inner: S,
    server: CancelToken,
    timeout: Option<Duration>,
    cut_streams: bool,
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for RequestTokenService<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    ResBody: http_body::Body,
{
    type Response = Response<TokenBody<ResBody>>;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<ReqBody>) -> ResponseFuture<S::Future> {
        let protocol = Protocol::of(request.headers());
        let header = match parse_grpc_timeout(request.headers()) {
            Ok(header) => header,
            // A deadline the caller meant and the layer cannot read: refused, not ignored.
            Err(err) => {
                return ResponseFuture::refused(protocol, Answer::BadTimeout, err.to_string());
            }
        };
        let deadline = match (header, self.timeout) {
            (Some(header), Some(configured)) => Some(header.min(configured)),
            (header, configured) => header.or(configured),
        };
        let source: CancelSource = self.server.child();
        let deadline_at = deadline.and_then(|deadline| Instant::now().checked_add(deadline));
        let timer = deadline.map(|deadline| source.cancel_after(deadline));
        if let Some(Err(err)) = timer {
            // No timer thread: the deadline could not be kept, so the request is refused
            // rather than run without it.
            return ResponseFuture::refused(
                protocol,
                Answer::NoTimer,
                format!("the request's deadline could not be armed (no timer thread: {err})"),
            );
        }
        request
            .extensions_mut()
            .insert(RequestToken::new(source.token()));
        let inner = self.inner.call(request);
        ResponseFuture::new(inner, source, protocol, deadline_at, self.cut_streams)
    }
}
