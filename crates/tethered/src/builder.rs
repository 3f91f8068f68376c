//! [`Builder`]: a job's name, abandon policy and parent token, before it is started.

use std::time::Duration;

use crate::completer::Completer;
use crate::job::JobOptions;
use crate::native::AbortableNative;
use crate::scope::NativeScope;
use crate::spawn_error::SpawnError;
use crate::spawner::Spawner;
#[cfg(doc)]
use crate::spawner::ThreadSpawner;
use crate::sync::Arc;
use crate::token::CancelToken;

/// Builds a native job with a name, an abandon policy or an outer token, then starts it where
/// its last call says: [`spawn_on`](Self::spawn_on) (a [`Spawner`]: a runtime's blocking
/// pool, a thread pool, a [`ThreadSpawner`]), [`spawn_in`](Self::spawn_in) (a
/// [`NativeScope`], on the scope's spawner) or [`external`](Self::external) (work that runs
/// elsewhere and reports through a [`Completer`]), as tokio's `task::Builder` ends in
/// `spawn_on`. Made by [`AbortableNative::builder`] or [`Builder::new`].
///
/// ```
/// use std::time::Duration;
/// use tethered::{AbortableNative, ThreadSpawner};
///
/// let job = AbortableNative::builder()
///     .name("sandbox-42")                       // thread name while it runs, Debug, reports
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

impl Builder {
    /// A job with no name, no abandon grace, and a token of its own.
    ///
    /// ```
    /// let job = tethered::Builder::new()
    ///     .name("sum")
    ///     .spawn_on(&tethered::ThreadSpawner::new(), |_| 1 + 1)?;
    /// assert_eq!(job.join_blocking()?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Self {
        Builder::default()
    }

    /// Names the job. While its closure runs, the thread it runs on carries the name (on
    /// Linux, whatever the pool: a tokio, smol or rayon thread reads as the job in `top -H`,
    /// `ps -L` and a debugger; the kernel keeps its first 15 bytes), and gets its own name
    /// back when the closure returns. The name also shows in `Debug` output,
    /// [`ShutdownReport`](crate::ShutdownReport)s and (with the `tracing` feature) the job's
    /// span. An unnamed job leaves its thread's name alone and pays nothing for it.
    ///
    /// ```
    /// # #[cfg(target_os = "linux")] {
    /// use tethered::{AbortableNative, ThreadSpawner};
    ///
    /// let job = AbortableNative::builder()
    ///     .name("render-3")
    ///     .spawn_on(&ThreadSpawner::new().name("pool"), |_| {
    ///         std::fs::read_to_string("/proc/thread-self/comm").unwrap()
    ///     })?;
    /// assert_eq!(job.join_blocking()?.trim_end(), "render-3");
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
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
    /// use tethered::{AbortableNative, CancelReason, NativeError, ThreadSpawner};
    ///
    /// let (started_tx, started) = std::sync::mpsc::channel();
    /// let (release, stuck) = std::sync::mpsc::channel::<()>();
    /// let job = AbortableNative::builder()
    ///     .abandon_after(Duration::from_millis(20))
    ///     .spawn_on(&ThreadSpawner::new(), move |_token| {
    ///         started_tx.send(()).unwrap();
    ///         stuck.recv() // ignores its token
    ///     })?;
    /// started.recv().unwrap();
    /// job.cancel(CancelReason::Timeout);
    /// let err = job.join_blocking().unwrap_err();
    /// assert!(matches!(err, NativeError::Abandoned { reason: CancelReason::Timeout, .. }));
    /// release.send(()).unwrap();
    /// # Ok::<(), tethered::SpawnError>(())
    /// ```
    pub fn abandon_after(mut self, grace: Duration) -> Self {
        self.options.abandon_after = Some(grace);
        self
    }

    /// Ties the job to an outer token: the job runs on its own child token of `parent`, so
    /// cancelling `parent` cancels the job, and dropping or cancelling the job (or its
    /// finishing) never touches `parent` or the parent's other children.
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason, CancelSource, ThreadSpawner};
    ///
    /// let request = CancelSource::new();
    /// let threads = ThreadSpawner::new();
    /// let first = AbortableNative::builder().child_of(&request.token()).spawn_on(&threads, |t| t.wait())?;
    /// let second = AbortableNative::builder().child_of(&request.token()).spawn_on(&threads, |t| t.wait())?;
    /// drop(first); // cancels the first job only
    /// assert!(!request.is_cancelled());
    /// request.cancel(CancelReason::Timeout); // reaches every job still tied to it
    /// let err = second.join_blocking().unwrap_err();
    /// assert_eq!(err.cancel_reason(), Some(&CancelReason::Timeout));
    /// # Ok::<(), tethered::SpawnError>(())
    /// ```
    pub fn child_of(mut self, parent: &CancelToken) -> Self {
        self.parent = Some(parent.clone());
        self
    }

    /// Starts the job through `spawner`: a runtime's blocking pool (`TokioSpawner`,
    /// `SmolSpawner`, `AsyncStdSpawner` in the adapter crates), a [`ThreadSpawner`] (a thread
    /// per job), or a pool of your own.
    ///
    /// # Errors
    ///
    /// The spawner's refusal: [`SpawnError::Thread`] when the OS starts no thread,
    /// [`SpawnError::Shutdown`] once a runtime shuts down, and so on. The closure never runs
    /// then, even if the spawner kept the task.
    ///
    /// ```
    /// use tethered::{AbortableNative, ThreadSpawner};
    /// let job = AbortableNative::builder().spawn_on(&ThreadSpawner::new(), |_token| 2 * 21)?;
    /// assert_eq!(job.join_blocking()?, 42);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn_on<S, T, F>(self, spawner: &S, f: F) -> Result<AbortableNative<T>, SpawnError>
    where
        S: Spawner + ?Sized,
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        AbortableNative::spawn_with(spawner, self.parent.as_ref(), self.options, None, f)
    }

    /// Starts the job in `scope`: the scope's spawner runs it (once a slot is free, if the
    /// scope is bounded), and the scope cancels, counts and (on shutdown) reports it. The job's
    /// token is a child of the scope's and, if [`child_of`](Self::child_of) gave one, of that
    /// parent's too.
    ///
    /// # Errors
    ///
    /// [`SpawnError::ScopeClosed`] once the scope is shut down or dropped, or the spawner's
    /// refusal.
    ///
    /// ```
    /// use tethered::{AbortableNative, NativeScope};
    ///
    /// let scope = NativeScope::new();
    /// let job = AbortableNative::builder().name("sum").spawn_in(&scope, |_| 1 + 1)?;
    /// assert_eq!(job.join_blocking()?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spawn_in<T, F>(self, scope: &NativeScope, f: F) -> Result<AbortableNative<T>, SpawnError>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        scope.spawn_with(self.parent.as_ref(), self.options, f)
    }

    /// A job whose work runs elsewhere (a process supervisor, a foreign event loop, a device):
    /// its handle, and the [`Completer`] that publishes its result. The job is tethered,
    /// counted and cancelled like any other, and its stop reads the same way; the work hears
    /// cancels through [`Completer::token`]. An abandon policy and a parent token apply as
    /// for a spawned job.
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason, CancelSource};
    ///
    /// let server = CancelSource::new();
    /// let (job, completer) = AbortableNative::builder().child_of(&server.token()).external();
    /// // The work's side: stop when told, report what was done.
    /// let worker = std::thread::spawn(move || {
    ///     let reason = completer.token().wait();
    ///     completer.complete(format!("stopped: {reason}"));
    /// });
    /// server.cancel(CancelReason::Shutdown);
    /// let err = job.join_blocking().unwrap_err();
    /// assert_eq!(err.cancel_reason(), Some(&CancelReason::Shutdown));
    /// assert!(err.returned().is_some_and(|done| done.starts_with("stopped")));
    /// worker.join().unwrap();
    /// ```
    pub fn external<T: Send + 'static>(self) -> (AbortableNative<T>, Completer<T>) {
        AbortableNative::external(self.parent.as_ref(), self.options)
    }

    /// A job whose work runs elsewhere, started in `scope` once the scope has a slot for it:
    /// `start` gets the job's [`Completer`] at once, on this thread, if a slot is free (or the
    /// scope has no limit); otherwise on the scope's spawner when a slot frees. The job holds
    /// its slot until it completes, so [`NativeScope::with_max_running`] bounds how much of
    /// that work exists at once (a process supervisor bounds live children so). A job
    /// cancelled while it waits finishes stopped (`Cancelled { returned: None, .. }`) and
    /// `start` is dropped, never called.
    ///
    /// `start` should only begin the work (hand it to a thread, a loop, a supervisor) and
    /// return. A panic in it drops the completer, which finishes the job as stopped.
    ///
    /// # Errors
    ///
    /// [`SpawnError::ScopeClosed`] once the scope is shut down.
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason, NativeScope};
    ///
    /// let scope = NativeScope::new().with_max_running(1);
    /// let (first_tx, first_rx) = std::sync::mpsc::channel();
    /// let first = AbortableNative::builder()
    ///     .external_in(&scope, move |completer| first_tx.send(completer).unwrap())?;
    /// let second = AbortableNative::builder().external_in(&scope, |completer| completer.complete(2))?;
    /// let third = AbortableNative::builder()
    ///     .external_in(&scope, |_: tethered::Completer<u32>| unreachable!("cancelled while waiting"))?;
    /// third.cancel(CancelReason::Requested); // waits for a slot: leaves at once, never started
    /// assert!(third.join_blocking().unwrap_err().returned().is_none());
    /// // `first` holds the only slot; its work completes it, and `second` starts.
    /// first_rx.recv().unwrap().complete(1);
    /// assert_eq!(first.join_blocking()?, 1);
    /// assert_eq!(second.join_blocking()?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn external_in<T, S>(
        self,
        scope: &NativeScope,
        start: S,
    ) -> Result<AbortableNative<T>, SpawnError>
    where
        T: Send + 'static,
        S: FnOnce(Completer<T>) + Send + 'static,
    {
        scope.external_with(self.parent.as_ref(), self.options, start)
    }
}

impl AbortableNative<()> {
    /// A [`Builder`] for a job (of any output type: the `()` here only names the function)
    /// with a name, an abandon policy or an outer token, on the pool of your choosing.
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelSource, ThreadSpawner};
    ///
    /// let request = CancelSource::new();
    /// let job = AbortableNative::builder()
    ///     .name("render-3")
    ///     .child_of(&request.token())
    ///     .spawn_on(&ThreadSpawner::new(), |token| token.is_cancelled())?;
    /// assert_eq!(job.join_blocking()?, false);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder() -> Builder {
        Builder::new()
    }
}
