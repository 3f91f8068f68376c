//! [`AbortableNative`]: the handle to a job on a native thread, tethered to its awaiter.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{AbortHandle, Tethered, cancel_job};
use crate::error::NativeError;
use crate::job::{JobControl, JobHandle};
use crate::job_id::JobId;
use crate::reason::{CancelReason, Cause};
use crate::sync::Arc;
use crate::token::CancelToken;

/// The handle to a job running `FnOnce(CancelToken) -> T` on a native thread.
///
/// It is a future resolving to `Result<T, NativeError<T>>`, and it is *tethered*: dropping it
/// before the job finished cancels the job's token with [`CancelReason::Dropped`]. So a
/// timeout, a lost `select!`, an aborted task or a runtime shutdown, all of which drop the
/// future, reach the native code, which sees [`CancelToken::is_cancelled`] turn `true`.
///
/// What it resolves to reads the same way whoever stopped the job (see [`NativeError`] for
/// the table of every case):
///
/// - `Ok(value)`: the closure returned `value` and no cancel came before it did.
/// - `Err(NativeError::Cancelled { reason, returned, .. })`: the job was stopped, and the
///   native code is done with it. `returned` is what the closure returned after the cancel (a
///   partial result, an error of its own), or `None` if it never ran.
/// - `Err(NativeError::Panicked(..))`: the closure panicked; the panic never reaches the task
///   that awaits.
/// - `Err(NativeError::Abandoned { .. })`: the caller stopped waiting for a cancelled closure
///   that still ran (a `timeout`, or a job with a [`grace`](crate::JobOptions::grace)).
///
/// Awaiting it (or [`join_blocking`](Self::join_blocking)) waits until the closure has
/// returned or was skipped, so it is also how to know the native thread is done with the job.
/// Cancelling it, deadlines, races and cancel-and-join are the [`Tethered`] methods every
/// handle has.
///
/// How to start one: an adapter's `spawn_native` on a runtime's pool,
/// [`NativeScope::spawn`](crate::NativeScope::spawn) in a scope, [`spawn`](crate::spawn) (or an
/// adapter's `spawn_native_with`) with [`JobOptions`](crate::JobOptions), and
/// [`AbortableNative::spawn`] for a thread of its own.
///
/// ```
/// use tethered::{AbortableNative, CancelReason};
///
/// let job = AbortableNative::spawn(|token| {
///     let mut n = 0u64;
///     while !token.is_cancelled() {
///         n += 1;
///     }
///     n
/// });
/// let token = tethered::Tethered::token(&job).clone();
/// drop(job); // the awaiting side goes away...
/// assert_eq!(token.wait(), CancelReason::Dropped); // ...and the job hears it
/// ```
#[must_use = "dropping an `AbortableNative` cancels its job"]
pub struct AbortableNative<T> {
    /// `None` once detached or joined.
    job: Option<Arc<dyn JobHandle<T>>>,
    token: CancelToken,
    id: JobId,
    /// The job's name, kept for `Debug` after the job was joined.
    name: Option<Arc<str>>,
}

// A handle reads the job's state, which changes only under the job's lock, by code of this
// crate that does not panic there; the closure's panic is caught on its own thread. So a
// panic on the awaiting side leaves the job whole, whatever `T` is (tokio's `JoinHandle` is
// unwind-safe for the same reason).
impl<T> std::panic::UnwindSafe for AbortableNative<T> {}
impl<T> std::panic::RefUnwindSafe for AbortableNative<T> {}

impl<T> AbortableNative<T> {
    /// The handle of `job`.
    pub(crate) fn handle<F>(job: Arc<crate::job::Job<T, F>>) -> Self
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        let token = job.source().token();
        let id = JobControl::id(&*job);
        let name = JobControl::name(&*job).map(Arc::from);
        AbortableNative {
            job: Some(job),
            token,
            id,
            name,
        }
    }

    /// The job's name, if it was given one with [`JobOptions::name`](crate::JobOptions::name).
    ///
    /// ```
    /// use tethered::JobOptions;
    ///
    /// let job = tethered::spawn(JobOptions::new().name("render-3"), |_| ())?;
    /// assert_eq!(job.name(), Some("render-3"));
    /// # job.join_blocking()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// Blocks the calling thread until the job finishes and returns its result: the twin of
    /// `.await` for synchronous callers. Do not call it on an async runtime's worker thread.
    ///
    /// # Panics
    ///
    /// If the handle already gave its result (it was awaited to the end, or a
    /// `timeout(d, &mut job)` gave the job's own result).
    ///
    /// # Errors
    ///
    /// The job's stop, as the handle reads it (see [`NativeError`]).
    ///
    /// ```
    /// let job = tethered::AbortableNative::spawn(|_token| 6 * 7);
    /// assert_eq!(job.join_blocking().unwrap(), 42);
    /// ```
    pub fn join_blocking(mut self) -> Result<T, NativeError<T>> {
        match self.job.take() {
            Some(job) => job.join_blocking(),
            None => panic!("`AbortableNative` joined after it completed"),
        }
    }

    /// Lets the job run on without a handle: the explicit opt-out of cancel-on-drop. Its token
    /// is not cancelled; it stays counted in [`stats()`](crate::stats)`.detached` (and
    /// `.running` while its closure runs) until it finishes.
    ///
    /// A job of a [`NativeScope`](crate::NativeScope) is still tracked by its scope, which
    /// cancels it with the others and reports it if a shutdown leaves it running: detaching it
    /// only lets go of the handle, and it does not count as detached unless a shutdown leaves
    /// it behind.
    ///
    /// ```
    /// use tethered::Tethered;
    ///
    /// let job = tethered::AbortableNative::spawn(|token| token.is_cancelled());
    /// let token = job.token().clone();
    /// job.detach();
    /// assert!(!token.is_cancelled());
    /// ```
    pub fn detach(mut self) {
        if let Some(job) = self.job.take() {
            if !job.in_scope() {
                job.mark_detached();
            }
            job.release();
        }
    }
}

impl<T> Tethered for AbortableNative<T> {
    type Value = T;

    fn id(&self) -> JobId {
        self.id
    }

    fn token(&self) -> &CancelToken {
        &self.token
    }

    fn is_finished(&self) -> bool {
        self.job.as_ref().is_none_or(|job| job.is_finished())
    }

    fn abort_handle(&self) -> AbortHandle {
        AbortHandle {
            token: self.token.clone(),
            id: self.id,
            job: self
                .job
                .as_ref()
                .map(|job| Arc::downgrade(&job.clone().control())),
        }
    }

    /// Overridden for speed: a cancel from the handle reaches the job directly, not through
    /// an [`AbortHandle`].
    fn cancel_with_cause(&self, reason: CancelReason, cause: impl Into<Cause>) -> bool {
        self.cancel_because(reason, Some(cause.into()))
    }

    fn cancel(&self, reason: CancelReason) -> bool {
        self.cancel_because(reason, None)
    }
}

impl<T> AbortableNative<T> {
    fn cancel_because(&self, reason: CancelReason, cause: Option<Cause>) -> bool {
        // A handle that was joined (or is being detached) cancels nothing.
        let Some(job) = &self.job else {
            return false;
        };
        cancel_job(self.token.state.arc(), Some(&**job), reason, cause)
    }
}

impl<T> Future for AbortableNative<T> {
    type Output = Result<T, NativeError<T>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let job = self.job.as_ref().expect(
            "`AbortableNative` polled after it gave its result (after a `timeout(d, &mut job)` \
                 that answered with the job's own result, await the job only on `Abandoned`; \
                 in a loop of `select!`, disable the branch once it has completed)",
        );
        let result = std::task::ready!(job.poll_result(cx));
        self.job = None;
        Poll::Ready(result)
    }
}

impl<T> Drop for AbortableNative<T> {
    fn drop(&mut self) {
        // A no-op once the job finished, or once the handle was joined or detached.
        self.cancel_because(CancelReason::Dropped, None);
        if let Some(job) = self.job.take() {
            // A result nobody took is dropped contained (a panic payload's `Drop` may panic).
            job.release();
        }
    }
}

impl<T> fmt::Debug for AbortableNative<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("AbortableNative");
        debug.field("id", &self.id);
        if let Some(name) = &self.name {
            debug.field("name", name);
        }
        debug
            .field("finished", &self.is_finished())
            .field("cancelled", &self.token.is_cancelled())
            .finish()
    }
}
