//! [`AbortHandle`]: cancels one job from elsewhere without owning its result.

use std::fmt;
use std::time::Instant;

use super::{cancel_at, cancel_job};
use crate::job::JobControl;
use crate::job_id::JobId;
use crate::reason::{CancelReason, Cause};
use crate::token::CancelToken;

/// Cancels one job from anywhere, without owning its result; made by
/// [`Tethered::abort_handle`](crate::Tethered::abort_handle). Cloning is cheap (two reference
/// counts), and it keeps neither the job nor its result alive.
///
/// ```
/// use tethered::{AbortableNative, CancelReason, Tethered};
///
/// let job = AbortableNative::spawn(|_| 5);
/// let abort = job.abort_handle();
/// assert_eq!(abort.id(), job.id());
/// assert_eq!(job.join_blocking().unwrap(), 5);
/// assert!(!abort.cancel(CancelReason::Requested)); // finished: nothing to cancel
/// assert!(abort.is_finished());
/// ```
#[derive(Clone)]
pub struct AbortHandle {
    pub(super) token: CancelToken,
    pub(super) id: JobId,
    pub(super) job: Option<crate::sync::Weak<dyn JobControl>>,
}

// See `AbortableNative`: cancelling from here changes nothing a panic could leave half-done.
impl std::panic::UnwindSafe for AbortHandle {}
impl std::panic::RefUnwindSafe for AbortHandle {}

impl AbortHandle {
    /// Cancels the job with `reason`, as [`Tethered::cancel`](crate::Tethered::cancel) does:
    /// `true` if this call decided its reason, `false` if it was cancelled already or has
    /// finished.
    pub fn cancel(&self, reason: CancelReason) -> bool {
        self.cancel_because(reason, None)
    }

    /// Cancels the job with `reason` and `cause`, as
    /// [`Tethered::cancel_with_cause`](crate::Tethered::cancel_with_cause) does.
    pub fn cancel_with_cause(&self, reason: CancelReason, cause: impl Into<Cause>) -> bool {
        self.cancel_because(reason, Some(cause.into()))
    }

    fn cancel_because(&self, reason: CancelReason, cause: Option<Cause>) -> bool {
        // A job nobody holds any more has finished: its sealed token makes this a no-op.
        let job = self.job.as_ref().and_then(|job| job.upgrade());
        cancel_job(self.token.state.arc(), job.as_deref(), reason, cause)
    }

    /// Cancels the job with [`CancelReason::Timeout`] at `deadline`, as
    /// [`Tethered::cancel_at`](crate::Tethered::cancel_at) does.
    ///
    /// # Errors
    ///
    /// Only if the crate's timer thread is not running and the OS refuses to start it.
    pub fn cancel_at(&self, deadline: Instant) -> std::io::Result<()> {
        let Some(job) = &self.job else {
            // Joined or detached before the handle was made: nothing left to cancel.
            return Ok(());
        };
        if deadline <= Instant::now() {
            self.token.state.record_deadline(deadline);
            self.cancel(CancelReason::Timeout);
            return Ok(());
        }
        cancel_at(&self.token, job.clone(), deadline)
    }

    /// Whether the job has finished (or its handle resolved and let go of it).
    pub fn is_finished(&self) -> bool {
        self.job
            .as_ref()
            .and_then(|job| job.upgrade())
            .is_none_or(|job| job.is_finished())
    }

    /// The job's token: cancelled when the job is.
    pub fn token(&self) -> &CancelToken {
        &self.token
    }

    /// The job's id.
    pub fn id(&self) -> JobId {
        self.id
    }
}

impl fmt::Debug for AbortHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AbortHandle")
            .field("id", &self.id)
            .field("finished", &self.is_finished())
            .field("cancelled", &self.token.is_cancelled())
            .finish()
    }
}
