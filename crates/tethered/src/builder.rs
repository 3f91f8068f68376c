//! [`NativeJob`]: a job's name, abandon policy and token, before it is spawned.

use std::time::Duration;

use crate::error::SpawnError;
use crate::job::JobOptions;
use crate::native::AbortableNative;
use crate::scope::NativeScope;
use crate::source::CancelSource;
use crate::spawner::{Spawner, ThreadSpawner};
use crate::sync::Arc;
use crate::token::CancelToken;

/// Builds a native job with a name, an abandon policy or an outer token, then spawns it.
///
/// ```
/// use std::time::Duration;
/// use tethered::{NativeJob, ThreadSpawner};
///
/// let job = NativeJob::builder()
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
pub struct NativeJob {
    options: JobOptions,
    source: Option<CancelSource>,
}

impl NativeJob {
    /// A job with no name, no abandon grace, and a token of its own.
    pub fn builder() -> Self {
        NativeJob::default()
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
    /// ```
    /// use std::time::Duration;
    /// use tethered::{CancelReason, NativeError, NativeJob};
    ///
    /// let (started_tx, started) = std::sync::mpsc::channel();
    /// let (release, stuck) = std::sync::mpsc::channel::<()>();
    /// let job = NativeJob::builder()
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

    /// Uses `source` as the job's cancellation source: cancelling it cancels the job, as does
    /// dropping the handle.
    pub fn source(mut self, source: CancelSource) -> Self {
        self.source = Some(source);
        self
    }

    /// Ties the job to an outer token: the job's source becomes
    /// [`parent.child()`](CancelToken::child).
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource, NativeError, NativeJob};
    ///
    /// let request = CancelSource::new();
    /// request.cancel(CancelReason::Timeout);
    /// let job = NativeJob::builder().child_of(&request.token()).spawn(|_| 1);
    /// assert!(matches!(job.join_blocking(), Err(NativeError::Cancelled(CancelReason::Timeout))));
    /// ```
    pub fn child_of(self, parent: &CancelToken) -> Self {
        self.source(parent.child())
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
        let (source, options) = self.into_parts();
        AbortableNative::spawn_with(spawner, source, options, None, f)
    }

    /// Spawns in `scope`: the scope's spawner runs it, and the scope cancels, counts and
    /// (on shutdown) reports it.
    pub fn spawn_in<T, F>(self, scope: &NativeScope, f: F) -> Result<AbortableNative<T>, SpawnError>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        let (source, options) = self.into_parts();
        scope.spawn_with(source, options, f)
    }

    fn into_parts(self) -> (CancelSource, JobOptions) {
        let mut options = self.options;
        options.external_source = self.source.is_some();
        (self.source.unwrap_or_default(), options)
    }
}
