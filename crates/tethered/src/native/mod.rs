//! Handles to tethered work: [`Tethered`], what every handle to a job can do (cancel it with a
//! reason, give it a deadline, time it out, race it, cancel and join it), and how a job is
//! cancelled from outside.
//!
//! `abortable.rs` is [`AbortableNative`], the handle to a job on a native thread;
//! `start.rs` makes jobs; `abort_handle.rs` cancels one from elsewhere; `timeout.rs` and
//! `cancel_when.rs` are the two futures that stop waiting for a job ([`Timeout`] is a
//! [`CancelWhen`] whose signal is the crate's timer).

mod abort_handle;
mod abortable;
mod cancel_when;
mod start;
mod timeout;

pub use abort_handle::AbortHandle;
pub use abortable::AbortableNative;
pub use cancel_when::CancelWhen;
pub use start::{spawn, spawn_external, spawn_or, spawned_or_stopped};
pub use timeout::Timeout;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use crate::error::NativeError;
use crate::job::JobControl;
use crate::job_id::JobId;
use crate::reason::{CancelReason, Cause};
use crate::state::{Cancel, TokenState};
use crate::token::CancelToken;

/// A handle to work tethered to the future that awaits it: it resolves to
/// `Result<Self::Value, NativeError<Self::Value>>` (read the same way for every handle and
/// whoever stopped the work: see [`NativeError`]), and it can be cancelled from the awaiting
/// side with a reason the work can read.
///
/// [`AbortableNative`](crate::AbortableNative) is one, and so are the handles of the crates
/// built on tethered (a child process, a pool turn); `&mut J` is one too: time out, keep the
/// handle, and then wait for what the work returns. A handle implements four methods
/// ([`id`](Self::id), [`token`](Self::token), [`is_finished`](Self::is_finished),
/// [`abort_handle`](Self::abort_handle)) and gets every other from here: cancel with a reason
/// (and a cause), deadlines, a race against a signal, a timeout, cancel-and-join.
///
/// ```
/// use std::time::Duration;
/// use tethered::{AbortableNative, CancelReason, NativeError, Tethered};
///
/// let mut job = AbortableNative::spawn(|token| {
///     let mut steps = 0u64;
///     while !token.is_cancelled() {
///         steps += 1;
///     }
///     steps
/// });
/// // Stop waiting after 10 ms, but keep the handle...
/// let result = match futures_executor::block_on((&mut job).timeout(Duration::from_millis(10))) {
///     // ...to wait, if the closure still ran, until it has stopped, for what it returned.
///     Err(NativeError::Abandoned { .. }) => futures_executor::block_on(job),
///     // (It had not started, or it stopped at once: that is its answer already.)
///     answered => answered,
/// };
/// assert_eq!(result.unwrap_err().cancel_reason(), Some(CancelReason::Timeout));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tethered handle",
    label = "expected a tethered handle (`AbortableNative`, `ProcessJob`, or `&mut` one of them)",
    note = "a spawn that can fail returns `Result<handle, SpawnError>`: add `?` (or handle the error) before timing out or awaiting the handle",
    note = "to time out and keep the handle, pass `&mut job`, then await `job` for what the work returned"
)]
pub trait Tethered: Future<Output = Result<Self::Value, NativeError<Self::Value>>> + Unpin {
    /// What the work produces when it finishes.
    type Value;

    /// The job's id, unique within the process.
    fn id(&self) -> JobId;

    /// The job's token: cancelled when the job is.
    fn token(&self) -> &CancelToken;

    /// Whether the work is finished: its closure has returned, or it will never run.
    fn is_finished(&self) -> bool;

    /// A cheap, clonable handle that cancels this work from elsewhere (another task, a
    /// callback, a signal handler's thread) without owning its result.
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason, Tethered};
    ///
    /// let job = AbortableNative::spawn(|token| token.wait());
    /// let abort = job.abort_handle();
    /// std::thread::spawn(move || abort.cancel(CancelReason::Requested));
    /// let err = job.join_blocking().unwrap_err();
    /// assert_eq!(err.cancel_reason(), Some(CancelReason::Requested));
    /// ```
    fn abort_handle(&self) -> AbortHandle;

    /// Cancels the work with `reason`: `true` if this call decided its reason, `false` if it
    /// was cancelled already (by anyone, or by an ancestor whose cancel came first: see
    /// [`CancelSource::cancel`](crate::CancelSource::cancel)) or has finished (a finished job
    /// is left alone).
    ///
    /// A running closure sees its token cancelled, and the handle resolves when it returns, to
    /// `Err(NativeError::Cancelled { reason, returned: Some(what it returned), .. })`. A job
    /// whose closure has not started finishes at once with `returned: None`, even while its
    /// task waits in a full pool: the closure is dropped unrun, and the pool's later run of the
    /// task does nothing.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use tethered::{AbortableNative, CancelReason, Tethered};
    ///
    /// let (started_tx, started) = mpsc::channel();
    /// let job = AbortableNative::spawn(move |token| {
    ///     started_tx.send(()).unwrap();
    ///     token.wait()
    /// });
    /// started.recv().unwrap(); // the closure runs: it will see the cancel and return
    /// assert!(job.cancel(CancelReason::Requested));
    /// let err = job.join_blocking().unwrap_err();
    /// assert_eq!(err.cancel_reason(), Some(CancelReason::Requested));
    /// assert_eq!(err.into_returned(), Some(CancelReason::Requested));
    /// ```
    fn cancel(&self, reason: CancelReason) -> bool {
        self.abort_handle().cancel(reason)
    }

    /// [`cancel`](Self::cancel) with a [`Cause`] the work reads from its token
    /// ([`CancelToken::cause`]) and the handle's error carries ([`NativeError::cause`]).
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason, Cause, Tethered};
    ///
    /// let job = AbortableNative::spawn(|token| token.wait());
    /// job.cancel_with_cause(CancelReason::Requested, Cause::msg("the user pressed stop"));
    /// let err = job.join_blocking().unwrap_err();
    /// assert_eq!(err.cause().unwrap().to_string(), "the user pressed stop");
    /// ```
    fn cancel_with_cause(&self, reason: CancelReason, cause: impl Into<Cause>) -> bool
    where
        Self: Sized,
    {
        self.abort_handle().cancel_with_cause(reason, cause)
    }

    /// Cancels the work with [`CancelReason::Timeout`] at `deadline`, unless it finished (or
    /// was cancelled) first: a deadline on the crate's timer thread, with no runtime needed,
    /// that the work's token carries ([`CancelToken::deadline`]). Awaiting the handle then
    /// gives the work's own answer once it has stopped (`Cancelled { reason: Timeout, .. }`
    /// if the deadline came first): "time out, then wait until the work has stopped". A
    /// deadline that has passed cancels at once. The deadline keeps neither the job nor its
    /// result alive, and leaves the timer as soon as the job finishes or is cancelled.
    ///
    /// # Errors
    ///
    /// Only if the timer thread is not running yet and the OS refuses to start it; nothing is
    /// scheduled then, and a later call tries again.
    fn cancel_at(&self, deadline: Instant) -> std::io::Result<()> {
        self.abort_handle().cancel_at(deadline)
    }

    /// [`cancel_at`](Self::cancel_at) `delay` from now; a `delay` too long for an `Instant`
    /// (`Duration::MAX`) never fires.
    ///
    /// # Errors
    ///
    /// As [`cancel_at`](Self::cancel_at).
    ///
    /// ```
    /// use std::time::Duration;
    /// use tethered::{AbortableNative, CancelReason, Tethered};
    ///
    /// let job = AbortableNative::spawn(|token| token.wait());
    /// job.cancel_after(Duration::from_millis(10))?;
    /// let err = job.join_blocking().unwrap_err();
    /// assert_eq!(err.cancel_reason(), Some(CancelReason::Timeout));
    /// # Ok::<(), std::io::Error>(())
    /// ```
    fn cancel_after(&self, delay: Duration) -> std::io::Result<()> {
        match Instant::now().checked_add(delay) {
            Some(deadline) => self.cancel_at(deadline),
            None => Ok(()),
        }
    }

    /// Races the work against `signal`: its result if it finishes first; if `signal`
    /// completes first, the work is cancelled with `reason` and the future stops waiting at
    /// once (see [`CancelWhen`] for what it resolves to).
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason, NativeError, Tethered};
    ///
    /// let job = AbortableNative::spawn(|token| token.wait());
    /// let token = job.token().clone();
    /// let raced = job.cancel_when(std::future::ready(()), CancelReason::Shutdown);
    /// let err = futures_executor::block_on(raced).unwrap_err();
    /// // Stopped at once: `Cancelled` if it had not started, `Abandoned` if it was running.
    /// assert!(matches!(err, NativeError::Cancelled { .. } | NativeError::Abandoned { .. }));
    /// assert_eq!(err.cancel_reason(), Some(CancelReason::Shutdown));
    /// assert_eq!(token.reason(), Some(CancelReason::Shutdown));
    /// ```
    fn cancel_when<S: Future>(self, signal: S, reason: CancelReason) -> CancelWhen<Self, S>
    where
        Self: Sized,
    {
        CancelWhen::new(self, signal, reason)
    }

    /// A deadline the caller hears at once: if the work has not finished `duration` from now,
    /// it is cancelled with [`CancelReason::Timeout`] and the future resolves right then (to
    /// `Abandoned` if the work still runs, see [`Timeout`]). On the crate's own timer, so it
    /// works on every runtime. Pass `&mut job` to keep the handle and await it afterwards for
    /// what the work returned.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tethered::{AbortableNative, CancelReason, Tethered};
    ///
    /// let job = AbortableNative::spawn(|token| token.wait());
    /// let token = job.token().clone();
    /// let err = futures_executor::block_on(job.timeout(Duration::from_millis(10))).unwrap_err();
    /// assert_eq!(err.cancel_reason(), Some(CancelReason::Timeout));
    /// assert_eq!(token.reason(), Some(CancelReason::Timeout));
    /// ```
    fn timeout(self, duration: Duration) -> Timeout<Self>
    where
        Self: Sized,
    {
        Timeout::new(self, Instant::now().checked_add(duration))
    }

    /// [`timeout`](Self::timeout) at an instant.
    fn timeout_at(self, deadline: Instant) -> Timeout<Self>
    where
        Self: Sized,
    {
        Timeout::new(self, Some(deadline))
    }

    /// Cancels with [`CancelReason::Requested`] now, and returns a future that resolves only
    /// after the work has stopped (its closure returned, or was skipped), to what it returned:
    /// cancel-and-join.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use tethered::{AbortableNative, CancelReason, NativeError, Tethered};
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
    /// ```
    fn cancel_and_join(self) -> CancelAndJoin<Self>
    where
        Self: Sized,
    {
        self.cancel_and_join_with(CancelReason::Requested)
    }

    /// [`cancel_and_join`](Self::cancel_and_join) with a reason of your choosing, e.g.
    /// [`CancelReason::Timeout`] when a deadline passed and the work's partial result is still
    /// wanted.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use tethered::{AbortableNative, CancelReason, Tethered};
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
    fn cancel_and_join_with(self, reason: CancelReason) -> CancelAndJoin<Self>
    where
        Self: Sized,
    {
        self.cancel(reason);
        CancelAndJoin { handle: self }
    }
}

/// A borrowed handle is a handle: a timeout on `&mut job` stops waiting at its deadline and
/// leaves `job` to be awaited for what the work returned.
impl<J: Tethered + ?Sized> Tethered for &mut J {
    type Value = J::Value;

    fn id(&self) -> JobId {
        (**self).id()
    }

    fn token(&self) -> &CancelToken {
        (**self).token()
    }

    fn is_finished(&self) -> bool {
        (**self).is_finished()
    }

    fn abort_handle(&self) -> AbortHandle {
        (**self).abort_handle()
    }

    fn cancel(&self, reason: CancelReason) -> bool {
        (**self).cancel(reason)
    }
}

/// Resolves once cancelled work has stopped, to what it returned; made by
/// [`Tethered::cancel_and_join`].
#[must_use = "futures do nothing unless polled"]
pub struct CancelAndJoin<J> {
    handle: J,
}

impl<J: Tethered> Future for CancelAndJoin<J> {
    type Output = J::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.handle).poll(cx)
    }
}

impl<J: fmt::Debug> fmt::Debug for CancelAndJoin<J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CancelAndJoin")
            .field("handle", &self.handle)
            .finish()
    }
}

/// Cancels a job from outside (its handle, an abort handle, a deadline, their drops): `true`
/// only if this call decided the reason (see [`CancelSource::cancel`](crate::CancelSource::cancel)).
///
/// One decision point: the job's token's flag. A job that finished has sealed its token, so
/// the cancel is a no-op; one that has not is cancelled before it can seal, and a job still
/// waiting (queued in a pool or a scope) finishes now instead of when a thread reaches it,
/// whichever reason the token took (this call's, or a cancelled ancestor's).
///
/// Generic over the job's view, not `&dyn JobControl`: the handle holds a `dyn JobHandle<T>`,
/// and turning that into a `dyn JobControl` is trait upcasting, newer than `rust-version`.
pub(crate) fn cancel_job<J>(
    token: &crate::sync::Arc<TokenState>,
    job: Option<&J>,
    reason: CancelReason,
    cause: Option<Cause>,
) -> bool
where
    J: JobControl + ?Sized,
{
    // A job's token is most often bare: its closure may be polling it right now.
    let outcome = token.cancel_likely_bare(reason, cause);
    if outcome.cancelled_it() {
        if let Some(job) = job {
            job.finish_if_queued();
            job.cancel_reached();
        }
    }
    outcome == Cancel::Won
}

/// Cancels the job behind `token` (and `job`) with `Timeout` at `at`, on the crate's timer; the
/// deadline keeps neither alive.
pub(crate) fn cancel_at(
    token: &CancelToken,
    job: crate::sync::Weak<dyn JobControl>,
    at: Instant,
) -> std::io::Result<()> {
    let weak = token.state.downgrade();
    token.on_deadline(at, move || {
        if let Some(token) = weak.upgrade() {
            let job = job.upgrade();
            cancel_job(&token, job.as_deref(), CancelReason::Timeout, None);
        }
    })
}
