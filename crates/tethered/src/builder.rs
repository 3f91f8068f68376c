//! [`Builder`]: a job's name, abandon policy and parent token, before it is spawned.

use std::time::Duration;

use crate::error::SpawnError;
use crate::job::JobOptions;
use crate::native::AbortableNative;
use crate::scope::NativeScope;
use crate::source::CancelSource;
use crate::spawner::{Spawner, ThreadSpawner};
use crate::sync::Arc;
use crate::token::CancelToken;

/// Builds a native job with a name, an abandon policy or an outer token, then spawns it where
/// its last call says: [`spawn`](Self::spawn) (a new thread), [`spawn_on`](Self::spawn_on) (a
/// [`Spawner`]: a runtime's blocking pool, a thread pool) or [`spawn_in`](Self::spawn_in) (a
/// [`NativeScope`], on the scope's spawner), as tokio's `task::Builder` ends in `spawn` or
/// `spawn_on`. Made by [`AbortableNative::builder`] or [`Builder::new`].
///
/// ```
/// use std::time::Duration;
/// use tethered::{AbortableNative, ThreadSpawner};
///
/// let job = AbortableNative::builder()
///     .name("sandbox-42")                       // thread name, Debug, reports, tracing
///     .abandon_after(Duration::from_secs(5))    // stop waiting 5 s after a cancel
///     .spawn_on(&ThreadSpawner::new(), |token| {
///         std::thread::current().name().map(str::to_owned)
///     })?;
/// assert_eq!(job.join_blocking()?.as_deref(), Some("sandbox-42"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
#[must_use = "a builder does nothing until one of its spawn methods is called"]
pub struct Builder {
    options: JobOptions,
    parent: Option<CancelToken>,
}

/// The builder's name before it became [`Builder`].
#[deprecated(
    since = "0.2.0",
    note = "renamed `tethered::Builder` (made by `AbortableNative::builder()`); `NativeJob` read \
            like the job itself"
)]
pub type NativeJob = Builder;

impl Builder {
    /// A job with no name, no abandon grace, and a token of its own.
    ///
    /// ```
    /// let job = tethered::Builder::new().name("sum").spawn(|_| 1 + 1);
    /// assert_eq!(job.join_blocking().unwrap(), 2);
    /// ```
    pub fn new() -> Self {
        Builder::default()
    }

    /// The constructor's name before [`Builder::new`] and [`AbortableNative::builder`].
    #[deprecated(
        since = "0.2.0",
        note = "use `AbortableNative::builder()` or `Builder::new()`"
    )]
    // The name the deprecated `NativeJob::builder()` resolves to: it goes with the alias.
    #[allow(clippy::self_named_constructors)]
    pub fn builder() -> Self {
        Builder::default()
    }

    /// Names the job: the thread's name on [`ThreadSpawner`], and the name in `Debug` output,
    /// [`ShutdownReport`](crate::ShutdownReport)s and (with the `tracing` feature) the job's
    /// span.
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.options.name = Some(name.into());
        self
    }

    /// The abandon policy: once the job is cancelled, its handle waits at most `grace` for the
    /// closure to return, then resolves to [`NativeError::Abandoned`](crate::NativeError::Abandoned)
    /// and the job counts as detached in [`stats()`](crate::stats) until the closure returns.
    /// Never silent: the error, the counter and a tracing event all say so.
    ///
    /// Without it (the default), an awaited job resolves only when its closure has returned.
    ///
    /// A `grace` too long for an `Instant` (such as `Duration::MAX`) never abandons.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tethered::{AbortableNative, CancelReason, NativeError};
    ///
    /// let (started_tx, started) = std::sync::mpsc::channel();
    /// let (release, stuck) = std::sync::mpsc::channel::<()>();
    /// let job = AbortableNative::builder()
    ///     .abandon_after(Duration::from_millis(20))
    ///     .spawn(move |_token| {
    ///         started_tx.send(()).unwrap();
    ///         stuck.recv() // ignores its token
    ///     });
    /// started.recv().unwrap();
    /// job.cancel(CancelReason::Timeout);
    /// let err = job.join_blocking().unwrap_err();
    /// assert!(matches!(err, NativeError::Abandoned { reason: CancelReason::Timeout, .. }));
    /// release.send(()).unwrap();
    /// ```
    pub fn abandon_after(mut self, grace: Duration) -> Self {
        self.options.abandon_after = Some(grace);
        self
    }

    /// Ties the job to `source`: as [`child_of`](Self::child_of)`(&source.token())`. The job
    /// runs on a child token of `source` and never cancels `source` itself.
    #[deprecated(
        since = "0.2.0",
        note = "use `child_of(&source.token())`: a job runs on its own child token of the \
                caller's and never cancels the caller's source"
    )]
    pub fn source(self, source: CancelSource) -> Self {
        self.child_of(&source.token())
    }

    /// Ties the job to an outer token: the job runs on its own child token of `parent`, so
    /// cancelling `parent` cancels the job, and dropping or cancelling the job (or its
    /// finishing) never touches `parent` or the parent's other children.
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason, CancelSource, NativeError};
    ///
    /// let request = CancelSource::new();
    /// let first = AbortableNative::builder().child_of(&request.token()).spawn(|t| t.wait());
    /// let second = AbortableNative::builder().child_of(&request.token()).spawn(|t| t.wait());
    /// drop(first); // cancels the first job only
    /// assert!(!request.is_cancelled());
    /// request.cancel(CancelReason::Timeout); // reaches every job still tied to it
    /// let heard = match second.join_blocking() {
    ///     Ok(reason) => reason,                                        // it was running
    ///     Err(NativeError::Cancelled(reason)) => reason,               // it never started
    ///     Err(other) => panic!("{other}"),
    /// };
    /// assert_eq!(heard, CancelReason::Timeout);
    /// ```
    pub fn child_of(mut self, parent: &CancelToken) -> Self {
        self.parent = Some(parent.clone());
        self
    }

    /// Spawns on a new `std` thread ([`ThreadSpawner`]).
    ///
    /// # Panics
    ///
    /// Only where [`std::thread::spawn`] would: if the OS cannot start a thread.
    pub fn spawn<T, F>(self, f: F) -> AbortableNative<T>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        self.spawn_on(&ThreadSpawner::new(), f)
            .unwrap_or_else(|err| panic!("failed to spawn thread: {err}"))
    }

    /// Spawns through `spawner`.
    pub fn spawn_on<S, T, F>(self, spawner: &S, f: F) -> Result<AbortableNative<T>, SpawnError>
    where
        S: Spawner + ?Sized,
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        AbortableNative::spawn_with(spawner, self.parent.as_ref(), self.options, None, f)
    }

    /// Spawns in `scope`: the scope's spawner runs it, and the scope cancels, counts and
    /// (on shutdown) reports it.
    pub fn spawn_in<T, F>(self, scope: &NativeScope, f: F) -> Result<AbortableNative<T>, SpawnError>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        scope.spawn_with(self.parent.as_ref(), self.options, f)
    }
}
