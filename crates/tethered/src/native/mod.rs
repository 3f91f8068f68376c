//! [`AbortableNative`]: the handle to a job on a native thread, tethered to its awaiter.
//!
//! `start.rs` makes jobs; `abort_handle.rs` cancels one from elsewhere.

mod abort_handle;
mod start;

pub use abort_handle::AbortHandle;

use crate::sync::Arc;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::error::NativeError;
use crate::job::{JobControl, JobHandle};
use crate::reason::CancelReason;
use crate::state::TokenState;
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
/// - `Err(NativeError::Cancelled { reason, returned })`: the job was stopped, and the native
///   code is done with it. `returned` is what the closure returned after the cancel (a partial
///   result, an error of its own), or `None` if it never ran.
/// - `Err(NativeError::Panicked(..))`: the closure panicked; the panic never reaches the task
///   that awaits.
/// - `Err(NativeError::Abandoned { .. })`: the caller stopped waiting for a cancelled closure
///   that still ran (a `timeout`, or a job built with
///   [`Builder::abandon_after`](crate::Builder::abandon_after)).
///
/// Awaiting it (or [`join_blocking`](Self::join_blocking)) waits until the closure has
/// returned or was skipped, so it is also how to know the native thread is done with the job.
///
/// How to start one: [`NativeScope::spawn`](crate::NativeScope::spawn) or an adapter's
/// `spawn_native` on a runtime's pool, [`Builder::spawn_on`](crate::Builder::spawn_on) for a
/// name, a parent token or another pool, and [`AbortableNative::spawn`] for a thread of its own.
///
/// ```
/// use std::time::Duration;
/// use tethered::{AbortableNative, CancelReason};
///
/// let job = AbortableNative::spawn(|token| {
///     let mut n = 0u64;
///     while !token.is_cancelled() {
///         n += 1;
///     }
///     n
/// });
/// let token = job.token();
/// drop(job); // the awaiting side goes away...
/// assert_eq!(token.reason(), Some(CancelReason::Dropped)); // ...and the job hears it
/// ```
#[must_use = "dropping an `AbortableNative` cancels its job"]
pub struct AbortableNative<T> {
    /// `None` once detached or joined.
    job: Option<Arc<dyn JobHandle<T>>>,
    token: CancelToken,
    /// The job's name, kept for `Debug` after the job was joined.
    name: Option<Arc<str>>,
}

impl<T> AbortableNative<T> {
    fn named(mut self) -> Self {
        self.name = self.job.as_ref().and_then(|job| job.name().map(Arc::from));
        self
    }

    /// The job's name, if it was given one with [`Builder::name`](crate::Builder::name).
    ///
    /// ```
    /// let job = tethered::Builder::new()
    ///     .name("render-3")
    ///     .spawn_on(&tethered::ThreadSpawner::new(), |_| ())?;
    /// assert_eq!(job.name(), Some("render-3"));
    /// # job.join_blocking()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }

    /// A token of the job: cancelled when the job is.
    pub fn token(&self) -> CancelToken {
        self.token.clone()
    }

    /// Cancels the job with `reason`; `true` if this call cancelled it, `false` if it was
    /// cancelled already or has finished (a finished job's token is left alone).
    ///
    /// A running closure sees its token cancelled, and the handle resolves when it returns, to
    /// `Err(NativeError::Cancelled { reason, returned: Some(what it returned) })`. A job whose
    /// closure has not started finishes at once with `returned: None`, even while its task
    /// waits in a full pool: the closure is dropped unrun, and the pool's later run of the task
    /// does nothing.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use tethered::{AbortableNative, CancelReason};
    ///
    /// let (started_tx, started) = mpsc::channel();
    /// let job = AbortableNative::spawn(move |token| {
    ///     started_tx.send(()).unwrap();
    ///     token.wait()
    /// });
    /// started.recv().unwrap(); // the closure runs: it will see the cancel and return
    /// assert!(job.cancel(CancelReason::custom("user pressed stop")));
    /// let err = job.join_blocking().unwrap_err();
    /// assert_eq!(err.cancel_reason(), Some(&CancelReason::custom("user pressed stop")));
    /// assert_eq!(err.into_returned(), Some(CancelReason::custom("user pressed stop")));
    /// ```
    pub fn cancel(&self, reason: CancelReason) -> bool {
        // A handle that was joined (or is being detached) cancels nothing.
        let Some(job) = &self.job else {
            return false;
        };
        cancel_job(&self.token.state, Some(&**job), reason)
    }

    /// A cheap, clonable handle that cancels this job from elsewhere (another task, a
    /// callback, a signal handler thread) without owning its result.
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason, NativeError};
    ///
    /// let job = AbortableNative::spawn(|token| token.wait());
    /// let abort = job.abort_handle();
    /// std::thread::spawn(move || abort.cancel(CancelReason::Requested));
    /// let err = job.join_blocking().unwrap_err();
    /// assert_eq!(err.cancel_reason(), Some(&CancelReason::Requested));
    /// ```
    pub fn abort_handle(&self) -> AbortHandle {
        AbortHandle {
            token: self.token.clone(),
            job: self
                .job
                .as_ref()
                .map(|job| Arc::downgrade(&job.clone().control())),
        }
    }

    /// Cancels the job with [`CancelReason::Timeout`] once `delay` has passed, unless it has
    /// finished (or was cancelled) first: a deadline on the crate's timer thread, with no
    /// runtime needed, that the job's token carries ([`CancelToken::deadline`]). Awaiting or
    /// joining the handle then gives the job's own answer once its closure has returned
    /// (`Err(NativeError::Cancelled { reason: Timeout, returned })` if the deadline came
    /// first), so this is "time out, then wait until the work has stopped" in one step, on
    /// every runtime. An adapter's `timeout` answers at the deadline instead, without waiting.
    ///
    /// A `delay` too long for an `Instant` (`Duration::MAX`) never fires. The deadline keeps
    /// neither the job nor its result alive, and leaves the timer as soon as the job finishes
    /// or is cancelled. On a handle that was already joined it does nothing.
    ///
    /// # Errors
    ///
    /// Only if the timer thread is not running yet and the OS refuses to start it; nothing is
    /// scheduled then, and a later call tries again.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tethered::{AbortableNative, CancelReason};
    ///
    /// let job = AbortableNative::spawn(|token| token.wait());
    /// job.cancel_after(Duration::from_millis(10))?;
    /// let err = job.join_blocking().unwrap_err();
    /// assert_eq!(err.cancel_reason(), Some(&CancelReason::Timeout));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn cancel_after(&self, delay: std::time::Duration) -> std::io::Result<()> {
        let Some(job) = &self.job else {
            return Ok(());
        };
        // `Weak`s both: a deadline keeps nothing alive.
        let token = self.token.state.downgrade();
        let job = Arc::downgrade(&job.clone().control());
        self.token.on_deadline(delay, move || {
            if let Some(token) = token.upgrade() {
                let job = job.upgrade();
                cancel_job(&token, job.as_deref(), CancelReason::Timeout);
            }
        })
    }

    /// Whether the job is finished: its closure has returned, or it will never run.
    pub fn is_finished(&self) -> bool {
        self.job.as_ref().is_none_or(|job| job.is_finished())
    }

    /// Cancels with [`CancelReason::Requested`] now, and returns a future that resolves only
    /// after the closure has returned (or was skipped): cancel-and-join.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use tethered::{AbortableNative, CancelReason, NativeError};
    ///
    /// let (started_tx, started) = mpsc::channel();
    /// let job = AbortableNative::spawn(move |token| {
    ///     started_tx.send(()).unwrap();
    ///     token.wait(); // blocks until cancelled
    ///     "cleaned up"
    /// });
    /// started.recv().unwrap();
    /// let result = futures_executor::block_on(job.cancel_and_join());
    /// // The closure has returned, and what it returned comes back with the stop:
    /// assert_eq!(result.unwrap_err().into_returned(), Some("cleaned up"));
    ///
    /// // Started or not (then it resolves at once, its closure never run), the handle says
    /// // that it was stopped and why:
    /// let job = AbortableNative::spawn(|token| token.wait());
    /// let err = futures_executor::block_on(job.cancel_and_join()).unwrap_err();
    /// assert!(matches!(err, NativeError::Cancelled { reason: CancelReason::Requested, .. }));
    /// ```
    pub fn cancel_and_join(self) -> CancelAndJoin<T> {
        self.cancel_and_join_with(CancelReason::Requested)
    }

    /// [`cancel_and_join`](Self::cancel_and_join) with a reason of your choosing, e.g.
    /// [`CancelReason::Timeout`] when a deadline passed and the closure's partial result is
    /// still wanted.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use tethered::{AbortableNative, CancelReason};
    ///
    /// let (started_tx, started) = mpsc::channel();
    /// let job = AbortableNative::spawn(move |token| {
    ///     started_tx.send(()).unwrap();
    ///     let mut steps = 0u64;
    ///     while !token.is_cancelled() {
    ///         steps += 1;
    ///     }
    ///     (steps, token.reason()) // a partial result that says why it stopped
    /// });
    /// started.recv().unwrap();
    /// let err = futures_executor::block_on(job.cancel_and_join_with(CancelReason::Timeout));
    /// let (_steps, why) = err.unwrap_err().into_returned().unwrap();
    /// assert_eq!(why, Some(CancelReason::Timeout));
    /// ```
    pub fn cancel_and_join_with(self, reason: CancelReason) -> CancelAndJoin<T> {
        self.cancel(reason);
        CancelAndJoin { handle: self }
    }

    /// Blocks the calling thread until the job finishes and returns its result: the twin of
    /// `.await` for synchronous callers. Do not call it on an async runtime's worker thread.
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
    /// let job = tethered::AbortableNative::spawn(|token| token.is_cancelled());
    /// let token = job.token();
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
        self.cancel(CancelReason::Dropped);
        if let Some(job) = self.job.take() {
            // A result nobody took is dropped contained (a panic payload's `Drop` may panic).
            job.release();
        }
    }
}

impl<T> fmt::Debug for AbortableNative<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("AbortableNative");
        if let Some(name) = &self.name {
            debug.field("name", name);
        }
        debug
            .field("finished", &self.is_finished())
            .field("cancelled", &self.token.is_cancelled())
            .finish()
    }
}

/// Cancels a job from outside (its handle, an abort handle, their drops): `true` only if this
/// call cancelled it.
///
/// One decision point: the job's token's flag. A job that finished has sealed its token, so
/// the cancel is a no-op; one that has not is cancelled before it can seal, and a job still
/// waiting (queued in a pool or a scope) finishes now instead of when a thread reaches it.
///
/// Generic over the job's view, not `&dyn JobControl`: the handle holds a `dyn JobHandle<T>`,
/// and turning that into a `dyn JobControl` is trait upcasting, newer than `rust-version`.
fn cancel_job<J>(token: &TokenState, job: Option<&J>, reason: CancelReason) -> bool
where
    J: JobControl + ?Sized,
{
    if !token.cancel(reason) {
        return false;
    }
    if let Some(job) = job {
        job.finish_if_queued();
    }
    true
}

/// Resolves once a cancelled job's closure has returned; made by
/// [`AbortableNative::cancel_and_join`].
#[must_use = "futures do nothing unless polled"]
#[derive(Debug)]
pub struct CancelAndJoin<T> {
    handle: AbortableNative<T>,
}

impl<T> Future for CancelAndJoin<T> {
    type Output = Result<T, NativeError<T>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.handle).poll(cx)
    }
}
