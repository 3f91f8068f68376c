//! [`Task`]: a request's turn, as the pool queues it and a seat runs it.

use tethered::{AbortHandle, CancelToken};

use super::worker::Worker;

/// What a turn returns: the publication of its result, which the seat calls once its counts
/// are updated (so a resolved request is counted).
pub(crate) type Publish = Box<dyn FnOnce() + Send>;

/// A request's turn: run on a seat's thread with the seat's worker, it returns the publication
/// of its result. Dropped unrun, it finishes its request as stopped.
pub(crate) struct Task {
    pub(crate) run: Box<dyn FnOnce(&mut Worker) -> Publish + Send>,
    /// Cancels the request (when the pool breaks while it waits).
    pub(crate) abort: AbortHandle,
    /// The request's token: a waiting request leaves the queue when it is cancelled.
    pub(crate) token: CancelToken,
}
