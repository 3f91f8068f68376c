//! [`ClientTokenLayer`]: the outgoing side. A call made on a request's behalf carries the
//! request's token: its deadline travels as `grpc-timeout`, and the call stops with the token.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{Request, Response};
use tethered::{CancelReason, CancelToken, Cancelled, WaitCancelled};
use tower_layer::Layer;
use tower_service::Service;

use crate::deadline::{GRPC_TIMEOUT, grpc_timeout, parse_grpc_timeout};
use crate::future::Protocol;
use crate::token::RequestToken;

/// The errors of a [`ClientTokenService`]: the inner service's, or the stop of a call whose
/// token was cancelled first (boxed, as tower's `BoxError`): a [`Cancelled`] carrying the
/// reason (`downcast_ref::<Cancelled>()`), or, for a gRPC call with the `tonic` feature, a
/// `tonic::Status` (`DEADLINE_EXCEEDED` for [`CancelReason::Timeout`], `CANCELLED` otherwise),
/// which a tonic client returns as it is, where it would make any other error `UNKNOWN`.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A tower layer for clients (a tonic `Channel`, a hyper client): an outgoing request that
/// carries a [`RequestToken`] in its extensions
///
/// - passes on what is left of the token's deadline as `grpc-timeout`, when it is a gRPC call
///   (by its `content-type`) and that is shorter than the header it has: so a deadline set at
///   the edge travels every hop, and the next server's [`RequestTokenLayer`](crate::RequestTokenLayer)
///   cancels its own work at the same instant;
/// - stops when the token is cancelled: the inner call is dropped (an HTTP/2 stream is reset, so
///   the next server sees its client go away) and the call fails with [`Cancelled`], carrying
///   the reason (a `tonic::Status` for a gRPC call, with the `tonic` feature: see [`BoxError`]);
///   a token cancelled already fails the call before it is sent.
///
/// A request without a token passes through untouched.
///
/// ```
/// use std::time::Duration;
/// use tethered::CancelSource;
/// use tethered_tower::{ClientTokenLayer, RequestToken};
/// use tower_layer::Layer;
/// use tower_service::Service;
///
/// // A stand-in for a client (a tonic `Channel`, say) that echoes the deadline it was given.
/// let client = tower::service_fn(|request: http::Request<()>| async move {
///     let header = request.headers().get("grpc-timeout").cloned();
///     Ok::<_, std::convert::Infallible>(http::Response::new(header))
/// });
/// let mut client = ClientTokenLayer::new().layer(client);
///
/// let request_token = CancelSource::new(); // the incoming request's, in a server
/// request_token.cancel_after(Duration::from_secs(2))?;
/// let mut call = http::Request::builder()
///     .header("content-type", "application/grpc")
///     .body(())?;
/// call.extensions_mut().insert(RequestToken::new(request_token.token()));
/// let response = futures_executor::block_on(client.call(call))?;
/// let header = response.into_body().expect("the deadline travels");
/// assert!(header.to_str()?.ends_with('u')); // just under 2 s, in microseconds
/// # Ok::<(), Box<dyn std::error::Error + Send + Sync>>(())
/// ```
///
/// With tonic, put the token in the request's extensions
/// (`request.extensions_mut().insert(RequestToken::new(token))`) and the layer around the
/// channel (`ServiceBuilder::new().layer(ClientTokenLayer::new()).service(channel)`).
#[derive(Clone, Copy, Debug, Default)]
pub struct ClientTokenLayer {
    _private: (),
}

impl ClientTokenLayer {
    /// The layer.
    pub fn new() -> Self {
        ClientTokenLayer::default()
    }
}

impl<S> Layer<S> for ClientTokenLayer {
    type Service = ClientTokenService<S>;

    fn layer(&self, inner: S) -> ClientTokenService<S> {
        ClientTokenService { inner }
    }
}

/// The service [`ClientTokenLayer`] wraps around a client.
#[derive(Clone, Debug)]
pub struct ClientTokenService<S> {
    inner: S,
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for ClientTokenService<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S::Error: Into<BoxError>,
{
    type Response = Response<ResBody>;
    type Error = BoxError;
    type Future = CallFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: Request<ReqBody>) -> CallFuture<S::Future> {
        let protocol = Protocol::of(request.headers());
        let Some(token) = RequestToken::from_extensions(request.extensions()) else {
            return CallFuture::new(self.inner.call(request), None, protocol);
        };
        if let Some(reason) = token.reason() {
            return CallFuture::stopped(reason, protocol);
        }
        if protocol == Protocol::Grpc
            && let Some(left) = token.time_left()
            && parse_grpc_timeout(request.headers()).is_none_or(|header| left < header)
            && let Some(value) = grpc_timeout(&token)
        {
            request.headers_mut().insert(GRPC_TIMEOUT, value);
        }
        CallFuture::new(self.inner.call(request), Some(&token), protocol)
    }
}

/// The response future of [`ClientTokenService`].
#[must_use = "futures do nothing unless polled"]
pub struct CallFuture<F> {
    state: CallState<F>,
    protocol: Protocol,
}

enum CallState<F> {
    Calling {
        inner: Pin<Box<F>>,
        stopped: Option<WaitCancelled>,
    },
    /// The token was cancelled before the call was sent.
    Stopped(CancelReason),
    Done,
}

impl<F> CallFuture<F> {
    fn new(inner: F, token: Option<&CancelToken>, protocol: Protocol) -> Self {
        CallFuture {
            state: CallState::Calling {
                inner: Box::pin(inner),
                stopped: token.map(CancelToken::cancelled),
            },
            protocol,
        }
    }

    fn stopped(reason: CancelReason, protocol: Protocol) -> Self {
        CallFuture {
            state: CallState::Stopped(reason),
            protocol,
        }
    }
}

/// The error of a call stopped by its token (see [`BoxError`]).
fn stopped_error(protocol: Protocol, reason: CancelReason) -> BoxError {
    #[cfg(feature = "tonic")]
    if protocol == Protocol::Grpc {
        let code = match reason {
            CancelReason::Timeout => tonic::Code::DeadlineExceeded,
            _ => tonic::Code::Cancelled,
        };
        return Box::new(tonic::Status::new(
            code,
            format!("the call was stopped: {reason}"),
        ));
    }
    let _ = protocol;
    Box::new(Cancelled::new(reason))
}

impl<F, B, E> Future for CallFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
    E: Into<BoxError>,
{
    type Output = Result<Response<B>, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        match &mut this.state {
            CallState::Calling { inner, stopped } => {
                if let Some(stopped) = stopped
                    && let Poll::Ready(reason) = Pin::new(stopped).poll(cx)
                {
                    // Dropping the inner call resets its stream: the next hop sees it go.
                    this.state = CallState::Done;
                    return Poll::Ready(Err(stopped_error(this.protocol, reason)));
                }
                match inner.as_mut().poll(cx) {
                    Poll::Ready(result) => {
                        this.state = CallState::Done;
                        Poll::Ready(result.map_err(Into::into))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
            CallState::Stopped(reason) => {
                let reason = reason.clone();
                this.state = CallState::Done;
                Poll::Ready(Err(stopped_error(this.protocol, reason)))
            }
            CallState::Done => panic!("`CallFuture` polled after it completed"),
        }
    }
}

impl<F> fmt::Debug for CallFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            CallState::Calling { .. } => "calling",
            CallState::Stopped(_) => "stopped",
            CallState::Done => "done",
        };
        f.debug_struct("CallFuture").field("state", &state).finish()
    }
}
