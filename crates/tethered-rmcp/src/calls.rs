//! [`Calls`]: the tool calls of one connection (a stdio connection, an HTTP session) that have
//! not been answered yet, each with the source that stops its job.
//!
//! # Invariants
//!
//! 1. Every call's source is a child of the connection's, which is a child of the server's
//!    token: the end of the connection stops every call of it, and a shutdown every call of
//!    every connection, each with the reason of whatever came first.
//! 2. A call is in `open` from the `tools/call` request until its answer goes out (or the
//!    connection ends); a `notifications/cancelled` finds it there by its request id.
//! 3. No user code runs under the lock: a cancel runs the call's callbacks, outside it.

use std::collections::HashMap;

use rmcp::model::RequestId;
use tethered::{CancelReason, CancelSource, CancelToken, Cause};

use crate::jobs::ToolJobs;
use crate::sync::{self, Arc, Mutex, MutexGuard};

/// The open calls of one connection.
#[derive(Debug)]
pub(crate) struct Calls {
    jobs: ToolJobs,
    connection: CancelSource,
    open: Mutex<HashMap<RequestId, CancelSource>>,
}

/// What the transport hands a `tools/call` request (in its extensions) for its
/// [`ToolCall`](crate::ToolCall): the call's token, and the server's jobs.
#[derive(Clone, Debug)]
pub(crate) struct CallSlot {
    pub(crate) token: CancelToken,
    pub(crate) jobs: ToolJobs,
}

impl Calls {
    pub(crate) fn new(jobs: &ToolJobs) -> Arc<Calls> {
        Arc::new(Calls {
            connection: jobs.server().child(),
            jobs: jobs.clone(),
            open: Mutex::new(HashMap::new()),
        })
    }

    fn open(&self) -> MutexGuard<'_, HashMap<RequestId, CancelSource>> {
        sync::lock(&self.open)
    }

    /// A `tools/call` request came: its slot. A second call with the same id (which a client
    /// must not send while the first is open) replaces the first in the map: a cancel by that
    /// id reaches the newest.
    pub(crate) fn call(&self, id: RequestId) -> CallSlot {
        let source = self.connection.token().child();
        let token = source.token();
        let replaced = self.open().insert(id, source);
        drop(replaced);
        CallSlot {
            token,
            jobs: self.jobs.clone(),
        }
    }

    /// The client cancelled call `id` (`notifications/cancelled`), giving `reason`.
    pub(crate) fn cancel(&self, id: &RequestId, reason: Option<&str>) {
        let Some(source) = self.open().remove(id) else {
            return;
        };
        let cause = match reason {
            Some(reason) => format!("the client cancelled the call: {reason}"),
            None => "the client cancelled the call".to_owned(),
        };
        source.cancel_with_cause(CancelReason::Dropped, Cause::msg(cause));
    }

    /// Call `id` was answered.
    pub(crate) fn answered(&self, id: &RequestId) {
        let done = self.open().remove(id);
        drop(done);
    }

    /// The connection ended (`why` says how): every call of it is stopped with `Dropped`.
    pub(crate) fn end(&self, why: &'static str) {
        self.connection
            .cancel_with_cause(CancelReason::Dropped, Cause::msg(why));
        let open = std::mem::take(&mut *self.open());
        drop(open);
    }
}
