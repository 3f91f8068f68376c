//! [`Completer`]: the publishing side of a job whose work runs elsewhere (a process
//! supervisor, a foreign event loop), made by [`Builder::external`](crate::Builder::external).

use std::fmt;

use crate::job::{External, Job};
use crate::sync::Arc;
use crate::token::CancelToken;

/// Publishes the result of a job whose work runs elsewhere: the counterpart of its
/// [`AbortableNative`](crate::AbortableNative) handle, made by
/// [`Builder::external`](crate::Builder::external).
///
/// The job counts as running in [`stats()`](crate::stats) from the moment it is made until it
/// completes. Whoever runs the work watches [`token`](Self::token) (with
/// [`CancelToken::on_cancel`] to push a cancel into the work, or a check in its loop) and
/// calls [`complete`](Self::complete) once the work has stopped; the handle then reads as
/// every handle does (see [`NativeError`](crate::NativeError)): `Ok(value)` if no cancel came
/// first, `Err(Cancelled { reason, returned: Some(value) })` if one did.
///
/// Dropping it without completing (the work was lost: its thread died, its loop closed)
/// finishes the job as stopped with nothing returned: with the cancel's reason if the token
/// was cancelled, or else with [`CancelReason::Shutdown`](crate::CancelReason::Shutdown) (the
/// job's token is cancelled with it).
///
/// ```
/// use tethered::{AbortableNative, CancelReason, NativeError};
///
/// // Work that some other thread (an event loop, a supervisor) carries out and reports.
/// let (job, completer) = AbortableNative::builder().name("remote-7").external::<u32>();
/// std::thread::spawn(move || {
///     let token = completer.token();
///     let mut steps = 0;
///     while !token.is_cancelled() && steps < 1_000_000 {
///         steps += 1;
///     }
///     completer.complete(steps);
/// });
/// match job.join_blocking() {
///     Ok(steps) => assert_eq!(steps, 1_000_000),
///     Err(err) => panic!("nothing cancelled it: {err}"),
/// }
///
/// // A cancel reaches the worker through the token, and the stop reads as any job's:
/// let (job, completer) = AbortableNative::builder().external::<&str>();
/// job.cancel(CancelReason::Timeout);
/// completer.complete("partial");
/// let err = job.join_blocking().unwrap_err();
/// assert!(matches!(err, NativeError::Cancelled { reason: CancelReason::Timeout, .. }));
/// assert_eq!(err.into_returned(), Some("partial"));
/// ```
#[must_use = "dropping the completer finishes its job as stopped"]
pub struct Completer<T: Send + 'static> {
    job: Option<Arc<Job<T, External<T>>>>,
}

impl<T: Send + 'static> Completer<T> {
    pub(crate) fn new(job: Arc<Job<T, External<T>>>) -> Self {
        Completer { job: Some(job) }
    }

    /// The job's token: cancelled when the job is (its handle dropped or cancelled, a
    /// deadline, a parent token).
    pub fn token(&self) -> CancelToken {
        match &self.job {
            Some(job) => job.token(),
            None => CancelToken::never(),
        }
    }

    /// Whether the job's token was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.job
            .as_ref()
            .is_some_and(|job| job.token_is_cancelled())
    }

    /// Finishes the job with what the work produced, and wakes its handle.
    pub fn complete(mut self, value: T) {
        if let Some(job) = self.job.take() {
            job.complete(Some(value));
        }
    }

    /// Finishes the job as panicked, with the panic the work caught (see
    /// [`catch_panic`](crate::catch_panic)): the handle gives
    /// `Err(NativeError::Panicked(panic))`, as for a spawned closure that panicked.
    ///
    /// ```
    /// use tethered::{AbortableNative, NativeError};
    ///
    /// let (job, completer) = AbortableNative::builder().external::<u32>();
    /// match tethered::catch_panic(|| -> u32 { panic!("the work failed") }) {
    ///     Ok(value) => completer.complete(value),
    ///     Err(panic) => completer.panicked(panic),
    /// }
    /// let err = job.join_blocking().unwrap_err();
    /// assert!(matches!(&err, NativeError::Panicked(panic) if panic.message() == Some("the work failed")));
    /// ```
    pub fn panicked(mut self, panic: crate::JobPanic) {
        if let Some(job) = self.job.take() {
            job.complete_panicked(panic);
        }
    }
}

impl<T: Send + 'static> Drop for Completer<T> {
    fn drop(&mut self) {
        if let Some(job) = self.job.take() {
            job.complete(None);
        }
    }
}

impl<T: Send + 'static> fmt::Debug for Completer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completer")
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}
