//! [`Tethered`]: an rmcp transport that sees, before rmcp does, every `tools/call` that comes
//! in, every `notifications/cancelled`, every answer that goes out, and the end of the input.

use std::borrow::Cow;
use std::future::Future;

use rmcp::RoleServer;
use rmcp::model::{ClientNotification, ClientRequest, JsonRpcMessage};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;

use crate::calls::Calls;
use crate::jobs::ToolJobs;
use crate::sync::Arc;

/// A server's transport (stdio, a session of streamable HTTP, any byte stream) that tethers
/// its tool calls to their ends, each before rmcp acts on it:
///
/// - a `tools/call` gets a token of its own, a child of the connection's, which the call's
///   [`ToolCall`](crate::ToolCall) finds;
/// - `notifications/cancelled` cancels that call's token with
///   [`Dropped`](tethered::CancelReason::Dropped), its reason text as the cause (rmcp then
///   cancels its own request token and drops the answer);
/// - the end of the input (stdin closed, the client gone, its session closed) cancels every
///   call of the connection at once, where rmcp would let them run up to 5 s to flush their
///   answers;
/// - an answer going out forgets its call.
///
/// [`serve_stdio`](crate::serve_stdio) and [`TetheredSessions`](crate::TetheredSessions) put
/// it in place; wrap another transport with [`Tethered::new`].
///
/// ```no_run
/// use rmcp::ServiceExt;
/// # #[derive(Clone)] struct Tools;
/// # impl rmcp::ServerHandler for Tools {}
/// # async fn serve(jobs: tethered_rmcp::ToolJobs) -> Result<(), Box<dyn std::error::Error>> {
/// // A server on a Unix socket's stream, tethered as stdio is.
/// let (stream, _) = tokio::net::UnixListener::bind("/tmp/mcp.sock")?.accept().await?;
/// let transport = tethered_rmcp::Tethered::new(rmcp::transport::IntoTransport::<
///     rmcp::RoleServer,
///     std::io::Error,
///     _,
/// >::into_transport(stream), &jobs);
/// Tools.serve(transport).await?.waiting().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Tethered<T> {
    inner: T,
    calls: Arc<Calls>,
}

impl<T> Tethered<T> {
    /// `inner`, tethered: its calls are stopped by `jobs`' server token, and by their own ends.
    pub fn new(inner: T, jobs: &ToolJobs) -> Self {
        Tethered::with_calls(inner, Calls::new(jobs))
    }

    pub(crate) fn with_calls(inner: T, calls: Arc<Calls>) -> Self {
        Tethered { inner, calls }
    }
}

impl<T: Transport<RoleServer>> Transport<RoleServer> for Tethered<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &item {
            JsonRpcMessage::Response(response) => self.calls.answered(&response.id),
            JsonRpcMessage::Error(error) => {
                if let Some(id) = &error.id {
                    self.calls.answered(id);
                }
            }
            JsonRpcMessage::Request(_) | JsonRpcMessage::Notification(_) => {}
        }
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        // The inner receive is cancel-safe, and nothing is done here before it returned:
        // rmcp polls this inside a `select!`.
        let mut message = self.inner.receive().await;
        match &mut message {
            None => self.calls.end("the client closed the connection"),
            Some(JsonRpcMessage::Request(request)) => {
                let id = request.id.clone();
                if let ClientRequest::CallToolRequest(call) = &mut request.request {
                    let slot = self.calls.call(id);
                    call.extensions.insert(slot);
                }
            }
            Some(JsonRpcMessage::Notification(notification)) => {
                if let ClientNotification::CancelledNotification(cancelled) =
                    &notification.notification
                    && let Some(id) = &cancelled.params.request_id
                {
                    self.calls.cancel(id, cancelled.params.reason.as_deref());
                }
            }
            Some(JsonRpcMessage::Response(_) | JsonRpcMessage::Error(_)) => {}
        }
        message
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.calls.end("the server closed the connection");
        self.inner.close()
    }
}
