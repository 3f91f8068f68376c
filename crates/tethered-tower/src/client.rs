//! [`ClientTokenLayer`]: the outgoing side. A call made on a request's behalf carries the
//! request's token: its deadline travels as `grpc-timeout`, and the call stops with the token.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{Request, Response};
use tethered::{CancelReason, CancelToken, Cause, WaitCancelled};
use tower_layer::Layer;
use tower_service::Service;

use crate::deadline::{GRPC_TIMEOUT_NAME, grpc_timeout, parse_grpc_timeout};
use crate::error::BoxError;
use crate::future::Protocol;
use crate::token::RequestToken;

/// A tower layer for clients (a tonic `Channel`, a hyper client): an outgoing request that
/// carries a [`RequestToken`] in its extensions
///
/// - passes on what is left of the token's deadline as `grpc-timeout`, when it is a gRPC call
///   (by its `content-type`) and that is shorter than the header it has: so a deadline set at
///   the edge travels every hop, and the next server's [`RequestTokenLayer`](crate::RequestTokenLayer)
///   cancels its own work at the same instant;
/// - stops when the token is cancelled: the inner call is dropped (an HTTP/2 stream is reset, so
///   the next server sees its client go away) and the call fails with [`CallStopped`], carrying
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
        let Ok(token) = RequestToken::from_extensions(request.extensions()) else {
            return CallFuture::new(self.inner.call(request), None, protocol);
        };
        if token.is_cancelled() {
            return CallFuture::stopped(CallStopped::of(&token, protocol));
        }
        if protocol == Protocol::Grpc
            && let Some(left) = token.time_left()
            // A malformed header of the caller's is replaced with the deadline that holds.
            && parse_grpc_timeout(request.headers())
                .ok()
                .flatten()
                .is_none_or(|header| left < header)
            && let Some(value) = grpc_timeout(&token)
        {
            request
                .headers_mut()
                .insert(GRPC_TIMEOUT_NAME.clone(), value);
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
        /// The request's token, and the wait for its cancel.
        stopped: Option<(CancelToken, WaitCancelled)>,
    },
    /// The token was cancelled before the call was sent.
    Stopped(CallStopped),
    Done,
}

impl<F> CallFuture<F> {
    fn new(inner: F, token: Option<&CancelToken>, protocol: Protocol) -> Self {
        CallFuture {
            state: CallState::Calling {
                inner: Box::pin(inner),
                stopped: token.map(|token| (token.clone(), token.cancelled())),
            },
            protocol,
        }
    }

    fn stopped(stopped: CallStopped) -> Self {
        CallFuture {
            protocol: stopped.protocol,
            state: CallState::Stopped(stopped),
        }
    }
}

/// The error of a call that [`ClientTokenLayer`] stopped because its request's token was
/// cancelled: the reason, and the cancel's cause if it gave one. The same type with every
/// feature (features only add): with `tonic`, a stopped gRPC call's error also carries the
/// `tonic::Status` a tonic client reads from it (`DEADLINE_EXCEEDED` for a timeout,
/// `CANCELLED` otherwise) as its [`source`](std::error::Error::source).
///
/// ```
/// use tethered::{CancelReason, CancelSource};
/// use tethered_tower::CallStopped;
///
/// let request = CancelSource::new();
/// request.cancel(CancelReason::Timeout);
/// let stopped = CallStopped::new(&request.token()).expect("cancelled");
/// assert_eq!(stopped.reason(), CancelReason::Timeout);
/// assert_eq!(stopped.to_string(), "the call was stopped: the deadline passed");
/// ```
#[derive(Debug)]
pub struct CallStopped {
    reason: CancelReason,
    cause: Option<Cause>,
    protocol: Protocol,
    #[cfg(feature = "tonic")]
    status: Option<tonic::Status>,
}

// An error value, never changed once made (`tonic::Status` holds a boxed error source, which
// keeps it from being unwind-safe by itself): unwind-safe with every feature, so that features
// only add to the API.
impl std::panic::UnwindSafe for CallStopped {}
impl std::panic::RefUnwindSafe for CallStopped {}

impl CallStopped {
    /// The error for a call stopped by `token`, if it is cancelled.
    pub fn new(token: &CancelToken) -> Option<CallStopped> {
        token
            .is_cancelled()
            .then(|| CallStopped::of(token, Protocol::Http))
    }

    fn of(token: &CancelToken, protocol: Protocol) -> CallStopped {
        let reason = token.reason().unwrap_or(CancelReason::Requested);
        CallStopped {
            reason,
            cause: token.cause(),
            protocol,
            #[cfg(feature = "tonic")]
            status: (protocol == Protocol::Grpc).then(|| {
                let code = match reason {
                    CancelReason::Timeout => tonic::Code::DeadlineExceeded,
                    _ => tonic::Code::Cancelled,
                };
                tonic::Status::new(code, format!("the call was stopped: {reason}"))
            }),
        }
    }

    /// Why the call was stopped.
    pub fn reason(&self) -> CancelReason {
        self.reason
    }

    /// The cancel's cause, if it gave one.
    pub fn cause(&self) -> Option<&Cause> {
        self.cause.as_ref()
    }
}

impl fmt::Display for CallStopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the call was stopped: {}", self.reason)
    }
}

impl std::error::Error for CallStopped {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        #[cfg(feature = "tonic")]
        if let Some(status) = &self.status {
            return Some(status);
        }
        self.cause.as_ref().map(|cause| cause.as_error() as _)
    }
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
                if let Some((token, stopped)) = stopped
                    && Pin::new(stopped).poll(cx).is_ready()
                {
                    // Dropping the inner call resets its stream: the next hop sees it go.
                    let error = CallStopped::of(token, this.protocol);
                    this.state = CallState::Done;
                    return Poll::Ready(Err(Box::new(error)));
                }
                match inner.as_mut().poll(cx) {
                    Poll::Ready(result) => {
                        this.state = CallState::Done;
                        Poll::Ready(result.map_err(Into::into))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
            CallState::Stopped(_) => {
                let CallState::Stopped(error) = std::mem::replace(&mut this.state, CallState::Done)
                else {
                    unreachable!("matched above")
                };
                Poll::Ready(Err(Box::new(error)))
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
