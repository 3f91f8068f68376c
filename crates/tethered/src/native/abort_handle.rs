//! [`AbortHandle`]: cancels one job from elsewhere without owning its result.

use std::fmt;

use super::cancel_job;
use crate::job::JobControl;
use crate::reason::CancelReason;
use crate::token::CancelToken;

/// Cancels one job from anywhere, without owning its result; made by
/// [`AbortableNative::abort_handle`](crate::AbortableNative::abort_handle). Cloning is cheap (two reference counts), and it keeps
/// neither the job nor its result alive.
#[derive(Clone)]
pub struct AbortHandle {
    pub(super) token: CancelToken,
    pub(super) job: Option<crate::sync::Weak<dyn JobControl>>,
}

impl AbortHandle {
    /// Cancels the job with `reason`, as [`AbortableNative::cancel`](crate::AbortableNative::cancel) does: `true` if this
    /// call cancelled it, `false` if it was cancelled already or has finished.
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason};
    ///
    /// let job = AbortableNative::spawn(|_| 5);
    /// let abort = job.abort_handle();
    /// assert_eq!(job.join_blocking().unwrap(), 5);
    /// assert!(!abort.cancel(CancelReason::Requested)); // finished: nothing to cancel
    /// ```
    pub fn cancel(&self, reason: CancelReason) -> bool {
        // A job nobody holds any more has finished: its sealed token makes this a no-op.
        let job = self.job.as_ref().and_then(|job| job.upgrade());
        cancel_job(&self.token.state, job.as_deref(), reason)
    }

    /// Cancels with [`CancelReason::Requested`]; see [`cancel`](Self::cancel).
    pub fn abort(&self) -> bool {
        self.cancel(CancelReason::Requested)
    }

    /// Whether the job has finished (or its handle resolved and let go of it).
    pub fn is_finished(&self) -> bool {
        self.job
            .as_ref()
            .and_then(|job| job.upgrade())
            .is_none_or(|job| job.is_finished())
    }

    /// A token of the job: cancelled when the job is.
    pub fn token(&self) -> CancelToken {
        self.token.clone()
    }
}
impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle")
            .field("finished", &self.is_finished())
            .field("cancelled", &self.token.is_cancelled())
            .finish()
    }
}
