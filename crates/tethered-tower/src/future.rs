//! [`ResponseFuture`]: the inner service's response, or the protocol's own answer once the
//! request's token is cancelled; dropping it cancels the token with `Dropped`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use http::{HeaderMap, HeaderValue, Response, StatusCode};
use tethered::{CancelReason, CancelSource, WaitCancelled};

use crate::body::TokenBody;
use crate::deadline::drop_reason;

/// Whether a request speaks gRPC (by its `content-type`), which decides how a stop answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protocol {
    Grpc,
    Http,
}

/// Why the layer answers a request itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Answer {
    /// The request's token was cancelled with this reason.
    Stopped(CancelReason),
    /// The request's `grpc-timeout` header is malformed.
    BadTimeout,
    /// The request's deadline could not be armed (no timer thread).
    NoTimer,
}

impl Protocol {
    pub(crate) fn of(headers: &HeaderMap) -> Protocol {
        let grpc = headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .is_some_and(|value| value.starts_with("application/grpc"));
        if grpc { Protocol::Grpc } else { Protocol::Http }
    }

    /// The layer's own answer: a short plain-text reason in the body (HTTP), or a trailers-only
    /// response with the status and the reason in `grpc-message` (gRPC).
    pub(crate) fn answer<B>(self, answer: Answer, detail: &str) -> Response<TokenBody<B>> {
        // gRPC: INVALID_ARGUMENT (3), DEADLINE_EXCEEDED (4), INTERNAL (13), UNAVAILABLE (14).
        let (status, grpc_status) = match answer {
            Answer::Stopped(CancelReason::Timeout) => (StatusCode::GATEWAY_TIMEOUT, "4"),
            Answer::Stopped(_) => (StatusCode::SERVICE_UNAVAILABLE, "14"),
            Answer::BadTimeout => (StatusCode::BAD_REQUEST, "3"),
            Answer::NoTimer => (StatusCode::INTERNAL_SERVER_ERROR, "13"),
        };
        match self {
            Protocol::Http => {
                let mut response = Response::new(TokenBody::message(format!("{detail}\n")));
                *response.status_mut() = status;
                response.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; charset=utf-8"),
                );
                response
            }
            Protocol::Grpc => {
                // A trailers-only response: the status in the headers of an HTTP 200.
                let mut response = Response::new(TokenBody::empty());
                let headers = response.headers_mut();
                headers.insert(
                    http::header::CONTENT_TYPE,
                    HeaderValue::from_static("application/grpc"),
                );
                headers.insert("grpc-status", HeaderValue::from_static(grpc_status));
                if let Ok(message) = HeaderValue::from_str(&percent_encode(detail)) {
                    headers.insert("grpc-message", message);
                }
                response
            }
        }
    }
}

/// gRPC's `grpc-message` encoding: printable ASCII but `%` as is, the rest percent-encoded.
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if (0x20..0x7f).contains(&byte) && byte != b'%' {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// The response future of [`RequestTokenService`](crate::RequestTokenService).
#[must_use = "futures do nothing unless polled"]
pub struct ResponseFuture<F> {
    state: State<F>,
    protocol: Protocol,
    /// When the request's deadline passes, if it has one.
    deadline: Option<Instant>,
    /// Whether the request's stop cuts its response stream short.
    cut_streams: bool,
}

enum State<F> {
    Running {
        inner: Pin<Box<F>>,
        stopped: WaitCancelled,
        /// Cancelled with `Dropped` if the future is dropped unfinished; handed to the body.
        source: CancelSource,
    },
    /// The layer answers without calling the inner service.
    Refused(Answer, String),
    Done,
}

impl<F> ResponseFuture<F> {
    pub(crate) fn new(
        inner: F,
        source: CancelSource,
        protocol: Protocol,
        deadline: Option<Instant>,
        cut_streams: bool,
    ) -> Self {
        ResponseFuture {
            state: State::Running {
                inner: Box::pin(inner),
                stopped: source.token().cancelled(),
                source,
            },
            protocol,
            deadline,
            cut_streams,
        }
    }

    pub(crate) fn refused(protocol: Protocol, answer: Answer, detail: String) -> Self {
        ResponseFuture {
            state: State::Refused(answer, detail),
            protocol,
            deadline: None,
            cut_streams: true,
        }
    }
}

impl<F, B, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: http_body::Body,
{
    type Output = Result<Response<TokenBody<B>>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let protocol = this.protocol;
        match &mut this.state {
            State::Running {
                inner,
                stopped,
                source,
            } => {
                // The stop first: once the deadline (or the server's shutdown) has come, the
                // answer is the protocol's, even if the handler, whose jobs stopped with the
                // token, answered in the same instant (with what a stopped job gives). A stop
                // that came already is seen with one load, without registering.
                if source.is_cancelled()
                    && let Poll::Ready(reason) = Pin::new(&mut *stopped).poll(cx)
                {
                    this.state = State::Done;
                    return Poll::Ready(Ok(stopped_answer(protocol, reason)));
                }
                let Poll::Ready(result) = inner.as_mut().poll(cx) else {
                    // Still running: from now on a stop must wake this future. Registered only
                    // here, so a handler that answers on its first poll (most do) never
                    // registers: an allocation and two lock round trips less per request.
                    if let Poll::Ready(reason) = Pin::new(stopped).poll(cx) {
                        // Its inner future goes now; its jobs heard the reason already.
                        this.state = State::Done;
                        return Poll::Ready(Ok(stopped_answer(protocol, reason)));
                    }
                    return Poll::Pending;
                };
                let State::Running { source, .. } = std::mem::replace(&mut this.state, State::Done)
                else {
                    unreachable!("matched above")
                };
                // The headers are out, not the body: the body holds the token to its end.
                let (deadline, cut) = (this.deadline, this.cut_streams);
                Poll::Ready(result.map(|response| {
                    response.map(|body| TokenBody::streaming(body, source, deadline, cut))
                }))
            }
            State::Refused(answer, detail) => {
                let (answer, detail) = (*answer, std::mem::take(detail));
                this.state = State::Done;
                Poll::Ready(Ok(protocol.answer(answer, &detail)))
            }
            State::Done => panic!("`ResponseFuture` polled after it completed"),
        }
    }
}

/// The protocol's answer for a request stopped with `reason` before its handler answered.
fn stopped_answer<B>(protocol: Protocol, reason: CancelReason) -> Response<TokenBody<B>> {
    let detail = format!("the request was stopped: {reason}");
    protocol.answer(Answer::Stopped(reason), &detail)
}

impl<F> Drop for ResponseFuture<F> {
    fn drop(&mut self) {
        if let State::Running { source, .. } = &self.state {
            // Unfinished: the client went away (or middleware dropped the request), or a
            // deadline outside this layer fired (see `DEADLINE_SLACK`).
            source.cancel(drop_reason(self.deadline));
        }
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Running { source, .. } => {
                if source.is_cancelled() {
                    "stopping"
                } else {
                    "running"
                }
            }
            State::Refused(..) => "refused",
            State::Done => "done",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .field("protocol", &self.protocol)
            .finish()
    }
}
