//! [`TokenBody`]: a response body that holds its request's token until the last byte is out,
//! or is the layer's own short answer.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tethered::{CancelReason, CancelSource, WaitCancelled};

use crate::deadline::drop_reason;
use crate::error::BoxError;

/// The body of every response that passes through a
/// [`RequestTokenLayer`](crate::RequestTokenLayer): the inner service's body, which keeps the
/// request's token until its end, or the layer's own answer (a plain-text reason for a request
/// it stopped or refused).
///
/// The response's headers going out do not end the request: a streamed body (server-sent
/// events, a large download, a gRPC server stream) is still being made by the request's work.
/// So the body holds the request's token: a client that disconnects while it streams cancels
/// it with [`CancelReason::Dropped`] (the body is dropped unfinished), and a cancel while it
/// streams (the deadline, the server's shutdown) ends the stream with an error. A body read to
/// its end lets the token go without cancelling it.
pub struct TokenBody<B> {
    kind: Kind<B>,
}

enum Kind<B> {
    Streaming {
        inner: Pin<Box<B>>,
        /// Cancelled with `Dropped` (or `Timeout`, near the deadline) if the body is dropped
        /// before its end.
        source: Option<CancelSource>,
        /// The request's stop, which cuts the stream short; `None` for a layer that lets
        /// streams finish ([`RequestTokenLayer::let_streams_finish`](crate::RequestTokenLayer::let_streams_finish)).
        stopped: Option<WaitCancelled>,
        deadline: Option<Instant>,
    },
    Message(Option<Bytes>),
}

impl<B> TokenBody<B> {
    /// The inner service's body, holding the request's `source` until its end. A body that is
    /// at its end already (an empty one) is done: hyper never polls it.
    pub(crate) fn streaming(
        inner: B,
        source: CancelSource,
        deadline: Option<Instant>,
        cut: bool,
    ) -> Self
    where
        B: Body,
    {
        let ended = inner.is_end_stream();
        TokenBody {
            kind: Kind::Streaming {
                inner: Box::pin(inner),
                stopped: cut.then(|| source.token().cancelled()),
                source: (!ended).then_some(source),
                deadline,
            },
        }
    }

    pub(crate) fn message(text: impl Into<Bytes>) -> Self {
        TokenBody {
            kind: Kind::Message(Some(text.into())),
        }
    }

    /// An empty body (a gRPC trailers-only answer).
    pub(crate) fn empty() -> Self {
        TokenBody {
            kind: Kind::Message(None),
        }
    }
}

/// A stream ended early because its request was stopped.
#[derive(Debug)]
pub struct BodyStopped {
    reason: CancelReason,
}

impl BodyStopped {
    /// Why the request was stopped.
    pub fn reason(&self) -> CancelReason {
        self.reason
    }
}

impl fmt::Display for BodyStopped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the response stream was cut short: its request was stopped ({})",
            self.reason
        )
    }
}

impl std::error::Error for BodyStopped {}

impl<B> Body for TokenBody<B>
where
    B: Body<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        match &mut this.kind {
            Kind::Message(text) => Poll::Ready(text.take().map(|text| Ok(Frame::data(text)))),
            Kind::Streaming {
                inner,
                source,
                stopped,
                ..
            } => {
                if source.is_none() {
                    return Poll::Ready(None);
                }
                // The stop first: the work that makes the stream heard it; the client must not
                // take a cut-short stream for a whole one.
                let stop = match stopped {
                    Some(stopped) => Pin::new(stopped).poll(cx),
                    None => Poll::Pending,
                };
                if let Poll::Ready(reason) = stop {
                    *source = None;
                    // A body that is whole already (it has ended, or its next frame is its
                    // last) was made by work that had finished: it goes out. Only a stream
                    // still being made is cut short.
                    match inner.as_mut().poll_frame(cx) {
                        Poll::Ready(None) => return Poll::Ready(None),
                        Poll::Ready(Some(frame)) if inner.is_end_stream() => {
                            return Poll::Ready(Some(frame.map_err(Into::into)));
                        }
                        _ => {}
                    }
                    return Poll::Ready(Some(Err(Box::new(BodyStopped { reason }))));
                }
                match inner.as_mut().poll_frame(cx) {
                    Poll::Ready(None) => {
                        // The whole body is out: the request is done, and nothing is cancelled.
                        *source = None;
                        Poll::Ready(None)
                    }
                    Poll::Ready(Some(frame)) => {
                        // The last frame is out when the body says so; hyper then drops it
                        // without polling for the end, which is no hang-up.
                        if inner.is_end_stream() {
                            *source = None;
                        }
                        Poll::Ready(Some(frame.map_err(Into::into)))
                    }
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.kind {
            Kind::Message(text) => text.is_none(),
            Kind::Streaming { inner, source, .. } => source.is_none() || inner.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Message(Some(text)) => SizeHint::with_exact(text.len() as u64),
            Kind::Message(None) => SizeHint::with_exact(0),
            Kind::Streaming { inner, .. } => inner.size_hint(),
        }
    }
}

impl<B> Drop for TokenBody<B> {
    fn drop(&mut self) {
        if let Kind::Streaming {
            source: Some(source),
            deadline,
            ..
        } = &self.kind
        {
            // Dropped before its end: the client went away while it streamed (or a deadline
            // outside the layer fired: see `DEADLINE_SLACK`).
            source.cancel(drop_reason(*deadline));
        }
    }
}

impl<B> fmt::Debug for TokenBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match &self.kind {
            Kind::Streaming {
                source: Some(_), ..
            } => "streaming",
            Kind::Streaming { source: None, .. } => "ended",
            Kind::Message(_) => "message",
        };
        f.debug_struct("TokenBody").field("kind", &kind).finish()
    }
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::pin::Pin;
    use std::task::{Context, Poll, Waker};

    use http_body::{Body, Frame};
    use http_body_util::{Full, StreamBody};
    use tethered::{CancelReason, CancelSource};

    use super::{Bytes, TokenBody};

    /// A whole body whose request is stopped before its first poll (a shutdown right after the
    /// handler answered) still goes out: only a stream still being made is cut short.
    #[test]
    fn a_whole_body_goes_out_even_if_the_request_stops_before_it_is_polled() {
        let server = CancelSource::new();
        let request = server.token().child();
        let whole = Full::new(Bytes::from_static(b"done"));
        let mut body = TokenBody::streaming(whole, request, None, true);
        server.cancel(CancelReason::Shutdown);
        let mut cx = Context::from_waker(Waker::noop());
        let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut body).poll_frame(&mut cx) else {
            panic!("the whole body was cut short");
        };
        assert_eq!(frame.into_data().ok().as_deref(), Some(&b"done"[..]));
        assert!(body.is_end_stream());
    }

    /// A stream still being made is cut short with the reason.
    #[test]
    fn a_stream_still_being_made_is_cut_short() {
        let server = CancelSource::new();
        let request = server.token().child();
        let frames = futures_util::stream::pending::<Result<Frame<Bytes>, Infallible>>();
        let mut body = TokenBody::streaming(StreamBody::new(frames), request, None, true);
        server.cancel(CancelReason::Shutdown);
        let mut cx = Context::from_waker(Waker::noop());
        let Poll::Ready(Some(Err(err))) = Pin::new(&mut body).poll_frame(&mut cx) else {
            panic!("the stream was not cut short");
        };
        assert!(err.to_string().contains("cut short"), "{err}");
    }

    /// With `let_streams_finish`, a stop leaves the stream to the service, which ends it (an
    /// MCP server answers the calls the stop ended on it); a dropped body still cancels the
    /// request with `Dropped`.
    #[test]
    fn a_stream_let_finish_goes_on_after_a_stop_and_a_drop_still_cancels() {
        let server = CancelSource::new();
        let request = server.token().child();
        let frames = futures_util::stream::iter([Ok::<_, Infallible>(Frame::data(
            Bytes::from_static(b"the answer"),
        ))]);
        let mut body = TokenBody::streaming(StreamBody::new(frames), request, None, false);
        server.cancel(CancelReason::Shutdown);
        let mut cx = Context::from_waker(Waker::noop());
        let Poll::Ready(Some(Ok(frame))) = Pin::new(&mut body).poll_frame(&mut cx) else {
            panic!("the stream was cut short");
        };
        assert_eq!(frame.into_data().ok().as_deref(), Some(&b"the answer"[..]));
        assert!(matches!(
            Pin::new(&mut body).poll_frame(&mut cx),
            Poll::Ready(None)
        ));

        let source = CancelSource::new();
        let token = source.token();
        let frames = futures_util::stream::pending::<Result<Frame<Bytes>, Infallible>>();
        let body = TokenBody::streaming(StreamBody::new(frames), source, None, false);
        drop(body);
        assert_eq!(token.reason(), Some(CancelReason::Dropped));
    }
}
