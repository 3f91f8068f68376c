//! [`ToolCall`]: a tool's handle on its call, which runs the call's native job.

use std::fmt;

use rmcp::ErrorData;
use rmcp::handler::server::common::FromContextPart;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::RequestId;
use tethered::{CancelSource, CancelToken, JobOptions, Tethered};
use tethered_tower::RequestToken;

use crate::calls::CallSlot;
use crate::jobs::ToolJobs;
use crate::stopped::CallStopped;

/// One tool call, taken as an argument of a `#[tool]` function: it runs the call's native work
/// as a job that stops however the call ends, and reads how it ended.
///
/// The job is a child of every way the call can end, and the first to come names its
/// [`CancelReason`](tethered::CancelReason):
///
/// | The call ends because | Over | Reason |
/// | --- | --- | --- |
/// | the client sends `notifications/cancelled` (a cancel, or its request timeout) | stdio, HTTP with sessions | `Dropped`, the client's reason text as the cause |
/// | the client closes stdin or dies; closes its session (`DELETE`) | stdio; HTTP with sessions | `Dropped` |
/// | the client drops the call's HTTP stream (a cancel, a timeout, a crash) | HTTP | `Dropped` |
/// | the server's own limit ([`ToolJobs::timeout`]) | every transport | `Timeout` |
/// | the server shuts down (SIGTERM) | every transport | `Shutdown` |
///
/// Over stateless HTTP a `notifications/cancelled` comes in a POST of its own, with no session
/// to find its call by: no server can route it (request ids are unique only within a session).
/// A client that cancels by dropping the call's stream (rmcp's, and every client of the
/// 2026-07-28 protocol) is served either way; use sessions (the default of
/// [`streamable_http`](crate::streamable_http)) for the others.
///
/// Its job runs on tokio's blocking pool, in the scope of [`ToolJobs`] if it has one, named
/// `tool#id` (the tool's name and the request's id: `top -H` shows which call a thread
/// serves).
///
/// ```no_run
/// use rmcp::handler::server::wrapper::Parameters;
/// use rmcp::{schemars, tool, tool_router};
/// use tethered_rmcp::{CallStopped, ToolCall};
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Script {
///     code: String,
/// }
///
/// #[derive(Clone)]
/// struct Tools;
///
/// #[tool_router]
/// impl Tools {
///     /// Runs untrusted code; stopped however the call ends.
///     #[tool]
///     async fn run(&self, Parameters(Script { code }): Parameters<Script>, call: ToolCall)
///         -> Result<String, CallStopped>
///     {
///         call.run(move |token| {
///             let mut steps = 0u64;
///             for _ in code.chars().cycle() {
///                 if token.is_cancelled() {
///                     break;
///                 }
///                 steps += 1; // one step of the interpreter
///             }
///             format!("{steps} steps")
///         })
///         .await
///     }
/// }
/// ```
pub struct ToolCall {
    name: String,
    id: RequestId,
    token: CancelToken,
    jobs: Option<ToolJobs>,
    /// The relay from rmcp's own request token, kept while the call lives.
    _rmcp: CancelSource,
    /// Counts the call in flight while its handler runs (a shutdown waits for it).
    _flying: Option<crate::jobs::Flying>,
}

impl ToolCall {
    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The request's id.
    pub fn id(&self) -> &RequestId {
        &self.id
    }

    /// The call's token: cancelled when the call ends early, with the reason of what ended it.
    pub fn token(&self) -> &CancelToken {
        &self.token
    }

    /// The options the call's job is spawned with: its name (`tool#id`), the call's token as
    /// its parent, and the limit of [`ToolJobs::timeout`]; for a job of your own
    /// ([`run_with`](Self::run_with)), add to them.
    pub fn options(&self) -> JobOptions {
        let mut options = JobOptions::new()
            .name(format!("{}#{}", self.name, self.id))
            .child_of(&self.token);
        if let Some(limit) = self.jobs.as_ref().and_then(ToolJobs::limit) {
            options = options.timeout(limit);
        }
        options
    }

    /// Runs `f` as the call's native job (see the type's docs) and gives what it returned, or
    /// how the call was stopped.
    ///
    /// # Errors
    ///
    /// [`CallStopped`], which a tool returns as its error (a tool error the client reads): the
    /// call ended before `f` finished (then `f` has returned, or was never started), `f`
    /// panicked, or the job could not start.
    pub async fn run<T, F>(&self, f: F) -> Result<T, CallStopped>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        self.run_with(self.options(), f).await
    }

    /// [`run`](Self::run) with options of your own (start from [`options`](Self::options): a
    /// job that is not the call's token's child does not stop with the call).
    ///
    /// # Errors
    ///
    /// As [`run`](Self::run).
    pub async fn run_with<T, F>(&self, options: JobOptions, f: F) -> Result<T, CallStopped>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        let spawned = match self.jobs.as_ref().and_then(ToolJobs::scope) {
            Some(scope) => tethered_tokio::spawn_native_with(options.in_scope(scope), f),
            None => tethered_tokio::spawn_native_with(options, f),
        };
        let job = spawned.map_err(|err| CallStopped::not_started(&self.name, &err))?;
        let id = job.id();
        job.await
            .map_err(|err| CallStopped::stopped(&self.name, id, err.without_returned()))
    }
}

impl<S> FromContextPart<ToolCallContext<'_, S>> for ToolCall {
    fn from_context_part(context: &mut ToolCallContext<'_, S>) -> Result<Self, ErrorData> {
        let request = &context.request_context;
        let slot = request.extensions.get::<CallSlot>().cloned();
        // Over streamable HTTP, rmcp hands the request's `http::request::Parts` along: the
        // POST's own token (`tethered-tower`'s layer) and the server's jobs are there.
        let parts = request.extensions.get::<http::request::Parts>();
        let post = parts.and_then(|parts| parts.extensions.get::<RequestToken>());
        let jobs = slot
            .as_ref()
            .map(|slot| slot.jobs.clone())
            .or_else(|| parts.and_then(|parts| parts.extensions.get::<ToolJobs>().cloned()));
        // rmcp's own token: cancelled for a cancel rmcp routed (the transport has heard it
        // first), at the end of a connection, on a stateless POST's disconnect.
        let rmcp = tethered_tokio_util::cancel_source_from(&request.ct);
        let mut parents: Vec<CancelToken> = vec![rmcp.token()];
        parents.extend(slot.map(|slot| slot.token));
        parents.extend(post.map(|post| post.token().clone()));
        parents.extend(jobs.as_ref().map(|jobs| jobs.server().clone()));
        let token = CancelSource::any_of(&parents).token();
        let flying = jobs.as_ref().map(ToolJobs::flying);
        Ok(ToolCall {
            name: context.name.to_string(),
            id: request.id.clone(),
            token,
            jobs,
            _rmcp: rmcp,
            _flying: flying,
        })
    }
}

impl fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCall")
            .field("name", &self.name)
            .field("id", &self.id)
            .field("cancelled", &self.token.reason())
            .finish_non_exhaustive()
    }
}
