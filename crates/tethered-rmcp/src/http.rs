//! Streamable HTTP: [`streamable_http`], rmcp's service with every session's transport
//! tethered ([`TetheredSessions`]), every POST given a token (`tethered-tower`'s layer) and
//! the server's jobs handed to every call.

use std::collections::HashMap;
use std::convert::Infallible;
use std::task::{Context, Poll};
use std::time::Duration;

use futures_core::Stream;
use http::Request;
use rmcp::ServerHandler;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::common::server_side_http::{ServerSseMessage, SessionId};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::store::EventStore;
use rmcp::transport::streamable_http_server::{
    RestoreOutcome, SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};
use tethered::CallbackGuard;
use tethered_tower::{RequestTokenLayer, RequestTokenService};
use tower_layer::Layer;
use tower_service::Service;

use crate::calls::Calls;
use crate::jobs::ToolJobs;
use crate::sync::{self, Arc, Mutex, Weak};
use crate::transport::Tethered;

/// A session manager whose every session's transport is [`Tethered`]: a session's
/// `notifications/cancelled` (a POST of its own) stops its call's job, and a closed session
/// (`DELETE`, or its idle end) stops every call of it at once, where rmcp would let them run
/// up to 5 s more.
#[derive(Debug)]
pub struct TetheredSessions<M = LocalSessionManager> {
    inner: M,
    jobs: ToolJobs,
    /// Each live session's calls (weak: the session's transport holds them).
    sessions: Mutex<HashMap<SessionId, Weak<Calls>>>,
}

impl<M> TetheredSessions<M> {
    /// `inner`'s sessions, tethered to `jobs`' server token.
    pub fn new(inner: M, jobs: &ToolJobs) -> Self {
        TetheredSessions {
            inner,
            jobs: jobs.clone(),
            sessions: Mutex::new(HashMap::new()),
        }
    }

    /// A new session's transport, tethered, and listed.
    fn tether<T>(&self, id: &SessionId, transport: T) -> Tethered<T> {
        let calls = Calls::new(&self.jobs);
        let mut sessions = sync::lock(&self.sessions);
        sessions.retain(|_, calls| calls.strong_count() > 0);
        sessions.insert(id.clone(), Arc::downgrade(&calls));
        drop(sessions);
        Tethered::with_calls(transport, calls)
    }
}

impl<M: SessionManager> SessionManager for TetheredSessions<M> {
    type Error = M::Error;
    type Transport = Tethered<M::Transport>;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let (id, transport) = self.inner.create_session().await?;
        let tethered = self.tether(&id, transport);
        Ok((id, tethered))
    }

    fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<rmcp::model::ServerJsonRpcMessage, Self::Error>> + Send {
        self.inner.initialize_session(id, message)
    }

    fn has_session(
        &self,
        id: &SessionId,
    ) -> impl Future<Output = Result<bool, Self::Error>> + Send {
        self.inner.has_session(id)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let calls = sync::lock(&self.sessions)
            .remove(id)
            .and_then(|calls| calls.upgrade());
        if let Some(calls) = calls {
            calls.end("the client closed the session");
        }
        self.inner.close_session(id).await
    }

    fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.inner.create_stream(id, message)
    }

    fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.inner.accept_message(id, message)
    }

    fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.inner.create_standalone_stream(id)
    }

    fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> impl Future<
        Output = Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error>,
    > + Send {
        self.inner.resume(id, last_event_id)
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        Ok(match self.inner.restore_session(id.clone()).await? {
            RestoreOutcome::Restored(transport) => {
                RestoreOutcome::Restored(self.tether(&id, transport))
            }
            RestoreOutcome::AlreadyPresent => RestoreOutcome::AlreadyPresent,
            // `NotSupported`, and what a later rmcp adds: the caller answers 404.
            _ => RestoreOutcome::NotSupported,
        })
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}

/// How long a shutdown waits for the calls it stopped to answer before rmcp ends every
/// session and stream.
const LANDING: Duration = Duration::from_secs(2);

/// The service [`streamable_http`] makes: rmcp's, under `tethered-tower`'s
/// [`RequestTokenLayer`] (each POST's token: its disconnect stops its calls) and
/// [`WithJobs`] (each call finds the server's jobs).
pub type McpService<H, M = LocalSessionManager> =
    RequestTokenService<WithJobs<StreamableHttpService<H, TetheredSessions<M>>>>;

/// rmcp's streamable HTTP service for the handlers `factory` makes, with every tool call
/// tethered, in both of rmcp's modes:
///
/// | The call ends because | With sessions (`legacy_session_mode`, rmcp's default) | Stateless |
/// | --- | --- | --- |
/// | `notifications/cancelled` (a cancel, a client's timeout), in a POST of its own | stops the call's job (`Dropped`) | cannot be routed (no session): see below |
/// | the client drops the call's stream (a cancel, a timeout, a crash) | stops it (`Dropped`) | stops it (`Dropped`) |
/// | `DELETE` of the session, or its idle end | stops every call of it at once (`Dropped`) | (no session) |
/// | [`ToolJobs::timeout`] | `Timeout` | `Timeout` |
/// | the server's token cancelled (SIGTERM) | `Shutdown`, and every session ends | `Shutdown` |
///
/// Without a session, a `notifications/cancelled` arrives in another POST than its call, and
/// request ids are unique only within a session: no server can tell whose call it names. A
/// client that cancels by closing the call's stream (rmcp's own, and every client of the
/// 2026-07-28 protocol) is served by either mode; the Python and TypeScript SDKs' clients of
/// the earlier protocol versions keep the stream open and send the notification, so serve
/// them with sessions.
///
/// `config`'s cancellation token (which ends every session and stream) is cancelled once
/// `jobs`' server token is and the calls it stopped have answered (2 s at most).
///
/// A client that dies closes its connections (its kernel does), and the call's stream ends at
/// once; `sse_keep_alive` only finds a client gone without a word (a network lost). Keep it
/// at seconds: every open call's stream carries one event each tick, which a client holding a
/// hundred calls must parse (a quarter of a second starved such a client on two cores).
///
/// ```no_run
/// use std::time::Duration;
/// use rmcp::transport::StreamableHttpServerConfig;
/// # #[derive(Clone)] struct Tools;
/// # impl rmcp::ServerHandler for Tools {}
///
/// let server = tethered_server::Server::new()?;
/// let jobs = tethered_rmcp::ToolJobs::of(&server);
/// let config = StreamableHttpServerConfig::default().with_sse_keep_alive(Some(Duration::from_secs(5)));
/// let mcp = tethered_rmcp::streamable_http(|| Ok(Tools), &jobs, config);
/// let app = axum::Router::new().nest_service("/mcp", mcp);
/// let token = server.token().clone();
/// server.run(Duration::from_secs(5), async move {
///     let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await?;
///     axum::serve(listener, app).with_graceful_shutdown(async move { token.cancelled().await; }).await
/// });
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn streamable_http<H>(
    factory: impl Fn() -> Result<H, std::io::Error> + Send + Sync + 'static,
    jobs: &ToolJobs,
    config: StreamableHttpServerConfig,
) -> McpService<H>
where
    H: ServerHandler + Send + 'static,
{
    streamable_http_with(factory, LocalSessionManager::default(), jobs, config)
}

/// [`streamable_http`] with a session manager of your own.
pub fn streamable_http_with<H, M>(
    factory: impl Fn() -> Result<H, std::io::Error> + Send + Sync + 'static,
    sessions: M,
    jobs: &ToolJobs,
    config: StreamableHttpServerConfig,
) -> McpService<H, M>
where
    H: ServerHandler + Send + 'static,
    M: SessionManager,
{
    let stop = config.cancellation_token.clone();
    // rmcp's own token ends every session and stream: cancelled once the calls the shutdown
    // stopped have answered (their handlers returned), so that their answers go out first.
    let landing = jobs.clone();
    let shutdown = Arc::new(jobs.server().on_cancel(move |_| {
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(async move {
                    landing.landed(LANDING).await;
                    // The last answers, handed to rmcp, reach their streams.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    stop.cancel();
                });
            }
            // Cancelled outside any runtime: nothing serves the streams any more.
            Err(_) => stop.cancel(),
        }
    }));
    let sessions = Arc::new(TetheredSessions::new(sessions, jobs));
    let service = StreamableHttpService::new(factory, sessions, config);
    let with_jobs = WithJobs {
        inner: service,
        jobs: jobs.clone(),
        _shutdown: shutdown,
    };
    // Each POST's token: the call's stream dropped stops its calls; a shutdown lets the
    // stream finish, carrying the answers of the calls it stopped.
    RequestTokenLayer::new(jobs.server())
        .let_streams_finish()
        .layer(with_jobs)
}

/// Hands every request the server's [`ToolJobs`] (in its extensions), where the calls of a
/// stateless request find it.
#[derive(Clone, Debug)]
pub struct WithJobs<S> {
    inner: S,
    jobs: ToolJobs,
    /// Cancels rmcp's own token once the server's is.
    _shutdown: Arc<CallbackGuard>,
}

impl<S, B> Service<Request<B>> for WithJobs<S>
where
    S: Service<Request<B>, Error = Infallible>,
{
    type Response = S::Response;
    type Error = Infallible;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request<B>) -> Self::Future {
        request.extensions_mut().insert(self.jobs.clone());
        self.inner.call(request)
    }
}
