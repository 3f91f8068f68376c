//! How a job is made: the constructors of [`AbortableNative`], all through
//! [`AbortableNative::spawn_with`] (or [`AbortableNative::external`]).

use super::AbortableNative;
use crate::completer::Completer;
use crate::job::{FinishObserver, Job, JobControl, JobHandle, JobOptions, external_placeholder};
use crate::reason::CancelReason;
use crate::spawn_error::SpawnError;
use crate::spawner::{Runnable, Spawner, ThreadSpawner, submit};
use crate::sync::Arc;
use crate::token::CancelSource;
use crate::token::CancelToken;

impl<T: Send + 'static> AbortableNative<T> {
    /// Runs `f` on a new `std` thread of its own: a thread per job.
    ///
    /// For a program with no async runtime, a test, or a few long jobs. A server, or anything
    /// that starts many jobs, runs them on a pool instead: an adapter's `spawn_native`
    /// (`tethered_tokio::spawn_native` on tokio's blocking pool) or a
    /// [`NativeScope`](crate::NativeScope). To name the thread, give it a parent token or an
    /// abandon policy, use [`AbortableNative::builder`] and
    /// [`spawn_on`](crate::Builder::spawn_on) with a [`ThreadSpawner`].
    ///
    /// # Panics
    ///
    /// Only where [`std::thread::spawn`] would: if the OS cannot start a thread. Use
    /// [`Builder::spawn_on`](crate::Builder::spawn_on) with a [`ThreadSpawner`] to get the
    /// error instead.
    ///
    /// ```
    /// let job = tethered::AbortableNative::spawn(|_token| "done");
    /// assert_eq!(futures_executor::block_on(job).unwrap(), "done");
    /// ```
    pub fn spawn<F>(f: F) -> Self
    where
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        Self::spawn_with(&ThreadSpawner::new(), None, JobOptions::default(), None, f)
            .unwrap_or_else(|err| panic!("failed to spawn thread: {err}"))
    }

    /// A handle that has already finished as stopped before it ran:
    /// `Err(NativeError::Cancelled { reason, returned: None })`, counted in
    /// [`stats()`](crate::stats) as a job spawned and cancelled.
    ///
    /// For an entry point that cannot return an error, whose spawner refused the job: every
    /// adapter's `spawn_native` hands out `AbortableNative::cancelled(CancelReason::Shutdown)`
    /// once its runtime shuts down (through [`or_cancelled`](Self::or_cancelled)), as tokio's
    /// own `spawn_blocking` handle then resolves to a cancelled `JoinError`.
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason, NativeError};
    ///
    /// let job = AbortableNative::<u32>::cancelled(CancelReason::Shutdown);
    /// assert!(job.is_finished());
    /// assert!(matches!(
    ///     job.join_blocking(),
    ///     Err(NativeError::Cancelled { reason: CancelReason::Shutdown, returned: None })
    /// ));
    /// ```
    pub fn cancelled(reason: CancelReason) -> Self {
        let (job, task) = Self::prepare(None, JobOptions::default(), None, |_| {
            unreachable!("a job made cancelled never runs its closure")
        });
        job.stop_unrun(reason);
        job.accept_refused();
        // Dropping the task now only finds the job finished.
        drop(task);
        Self::handle(job)
    }

    /// The handle an entry point that cannot return an error hands out: the spawned job, or,
    /// if a pool that shuts down refused it ([`SpawnError::Shutdown`], [`SpawnError::Rejected`],
    /// [`SpawnError::ScopeClosed`]), a handle already stopped with
    /// [`CancelReason::Shutdown`] ([`AbortableNative::cancelled`]). Every adapter's
    /// `spawn_native` ends with it, so a `Drop` that schedules clean-up while its runtime
    /// shuts down cannot abort the process.
    ///
    /// # Panics
    ///
    /// On any other error, with its message: no runtime ([`SpawnError::NoRuntime`]), no
    /// thread from the OS ([`SpawnError::Thread`]), a spawner's own error. `spawn_blocking`
    /// and `std::thread::spawn` panic there too.
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason, NativeError, Runnable, SpawnError, Spawner};
    ///
    /// struct Closed;
    /// impl Spawner for Closed {
    ///     fn spawn(&self, _task: Runnable) -> Result<(), SpawnError> {
    ///         Err(SpawnError::shutdown("example pool"))
    ///     }
    /// }
    ///
    /// let job = AbortableNative::or_cancelled(AbortableNative::builder().spawn_on(&Closed, |_| 1));
    /// let err = job.join_blocking().unwrap_err();
    /// assert_eq!(err.cancel_reason(), Some(&CancelReason::Shutdown));
    /// ```
    #[track_caller]
    pub fn or_cancelled(spawned: Result<Self, SpawnError>) -> Self {
        match spawned {
            Ok(job) => job,
            Err(SpawnError::Shutdown { .. } | SpawnError::Rejected | SpawnError::ScopeClosed) => {
                Self::cancelled(CancelReason::Shutdown)
            }
            Err(err) => panic!("{err}"),
        }
    }

    /// The one way a job is made: `Builder` and `NativeScope` come through here too.
    pub(crate) fn spawn_with<S, F>(
        spawner: &S,
        parent: Option<&CancelToken>,
        options: JobOptions,
        observer: Option<Arc<dyn FinishObserver>>,
        f: F,
    ) -> Result<Self, SpawnError>
    where
        S: Spawner + ?Sized,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        let (job, task) = Self::prepare(parent, options, observer, f);
        if let Err(err) = submit(spawner, task) {
            // Refused: the job finishes unrun at once.
            job.stop_unrun(CancelReason::Shutdown);
            return Err(err);
        }
        Self::accepted(job, spawner)
    }

    /// Makes the job and its task, before any spawner sees it. The job's token is its own: a
    /// child of `parent`, if given.
    pub(crate) fn prepare<F>(
        parent: Option<&CancelToken>,
        options: JobOptions,
        observer: Option<Arc<dyn FinishObserver>>,
        f: F,
    ) -> (Arc<Job<T, F>>, Runnable)
    where
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        let job = Self::make(parent, options, observer, f);
        let task = Runnable::new(job.clone());
        (job, task)
    }

    /// Makes a job and registers what it needs on its token.
    pub(crate) fn make<F>(
        parent: Option<&CancelToken>,
        mut options: JobOptions,
        observer: Option<Arc<dyn FinishObserver>>,
        f: F,
    ) -> Arc<Job<T, F>>
    where
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        options.has_parent = parent.is_some();
        let source = parent.map_or_else(CancelSource::new, CancelToken::child);
        let job = Arc::new(Job::new(f, source, options, observer));
        job.watch();
        job
    }

    /// A job whose work runs elsewhere, started at once: its handle, and the [`Completer`]
    /// that publishes its result.
    pub(crate) fn external(
        parent: Option<&CancelToken>,
        options: JobOptions,
    ) -> (Self, Completer<T>) {
        let job = Self::make(parent, options, None, external_placeholder());
        job.start_external();
        job.accept()
            .expect("a job that no spawner saw cannot have been refused");
        let completer = Completer::new(job.clone());
        (Self::handle(job), completer)
    }

    /// The handle of a job whose task a spawner accepted (or a scope queued).
    pub(crate) fn accepted<S, F>(job: Arc<Job<T, F>>, spawner: &S) -> Result<Self, SpawnError>
    where
        S: Spawner + ?Sized,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        // `accept` fails only when the spawner dropped the task while spawning it.
        job.accept().map_err(|_| spawner.refused())?;
        Ok(Self::handle(job))
    }

    /// The handle of `job`.
    fn handle<F>(job: Arc<Job<T, F>>) -> Self
    where
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        let token = job.source().token();
        AbortableNative {
            job: Some(job),
            token,
            name: None,
        }
        .named()
    }
}
