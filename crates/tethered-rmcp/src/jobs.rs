//! [`ToolJobs`]: what every tool call of a server shares: the token a shutdown cancels, the
//! scope its jobs run in, the longest a call may run.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tethered::{CancelToken, NativeScope};

use crate::sync::Arc;

/// Where a server's tool calls run their native jobs, and what stops them all: the server's
/// token (its shutdown, [`CancelReason::Shutdown`](tethered::CancelReason::Shutdown)), the
/// scope the jobs run in (counted, bounded, named in the shutdown's report), and the longest a
/// call may run ([`CancelReason::Timeout`](tethered::CancelReason::Timeout)).
///
/// Made once and handed to [`serve_stdio`](crate::serve_stdio) or
/// [`streamable_http`](crate::streamable_http): every call's [`ToolCall`](crate::ToolCall)
/// finds it there. Cheap to clone.
///
/// ```
/// use std::time::Duration;
///
/// let server = tethered_server::Server::new()?;
/// // The server's token and scope: SIGTERM stops every call's job, and the report names a
/// // job that does not stop.
/// let jobs = tethered_rmcp::ToolJobs::of(&server).timeout(Duration::from_secs(30));
/// assert!(jobs.server().same_as(server.token()));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ToolJobs {
    inner: Arc<Inner>,
    /// Tool calls whose handler runs now (a [`ToolCall`](crate::ToolCall) is alive).
    in_flight: Arc<InFlight>,
}

/// The count of tool calls in flight, and a wake-up for whoever waits for it to reach zero.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    count: AtomicUsize,
    zero: tokio::sync::Notify,
}

/// Counts one call in flight until dropped.
#[derive(Debug)]
pub(crate) struct Flying(Arc<InFlight>);

impl Drop for Flying {
    fn drop(&mut self) {
        // ORDERING: AcqRel: the last call's drop publishes everything it did (its answer
        // handed to rmcp) to the waiter that sees zero.
        if self.0.count.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.zero.notify_waiters();
        }
    }
}

#[derive(Clone, Debug)]
struct Inner {
    server: CancelToken,
    scope: Option<Arc<NativeScope>>,
    timeout: Option<Duration>,
}

impl ToolJobs {
    /// Jobs stopped by `server`'s cancel (a shutdown), each on tokio's blocking pool.
    pub fn new(server: &CancelToken) -> Self {
        ToolJobs {
            inner: Arc::new(Inner {
                server: server.clone(),
                scope: None,
                timeout: None,
            }),
            in_flight: Arc::default(),
        }
    }

    /// The jobs of a `tethered_server::Server`: stopped by its token (SIGTERM, Ctrl-C), run in
    /// its default scope, so that its shutdown waits for them and its report names one that
    /// does not stop. The one way to tie a call's job to the server's shutdown: a job stopped
    /// by the shutdown reads `Shutdown`, whatever else the shutdown also ends (the session,
    /// rmcp's own request token).
    pub fn of(server: &tethered_server::Server) -> Self {
        ToolJobs::new(server.token()).in_scope(server.scope())
    }

    /// Runs the jobs in `scope` (bounded by its limit, shut down with it).
    #[must_use]
    pub fn in_scope(mut self, scope: Arc<NativeScope>) -> Self {
        Arc::make_mut(&mut self.inner).scope = Some(scope);
        self
    }

    /// Gives every call's job a deadline: `limit` after it starts, it is cancelled with
    /// `Timeout` and the call answers with a tool error that says so. `Duration::MAX` means
    /// none.
    #[must_use]
    pub fn timeout(mut self, limit: Duration) -> Self {
        Arc::make_mut(&mut self.inner).timeout = Some(limit);
        self
    }

    /// The server's token: every call's job is its descendant.
    pub fn server(&self) -> &CancelToken {
        &self.inner.server
    }

    pub(crate) fn scope(&self) -> Option<&Arc<NativeScope>> {
        self.inner.scope.as_ref()
    }

    pub(crate) fn limit(&self) -> Option<Duration> {
        self.inner.timeout
    }

    /// A call's handler starts: counted until the returned guard drops.
    pub(crate) fn flying(&self) -> Flying {
        // ORDERING: AcqRel, as the drop's.
        self.in_flight.count.fetch_add(1, Ordering::AcqRel);
        Flying(self.in_flight.clone())
    }

    /// Waits until no call's handler runs (or `limit` passed).
    pub(crate) async fn landed(&self, limit: Duration) {
        let wait = async {
            loop {
                let zero = self.in_flight.zero.notified();
                // ORDERING: Acquire pairs with the last drop's release.
                if self.in_flight.count.load(Ordering::Acquire) == 0 {
                    return;
                }
                zero.await;
            }
        };
        let _ = tokio::time::timeout(limit, wait).await;
    }
}
