//! How a job is made: [`spawn`] and the other constructors, all through [`prepare`] (or
//! [`external`] for work that runs elsewhere).

use std::time::Instant;

use super::{AbortableNative, cancel_at};
use crate::completer::Completer;
use crate::contain::{drop_contained, run_contained};
use crate::deferred::Deferred;
use crate::job::{FinishObserver, Job, JobControl, JobHandle, Settings, external_placeholder};
use crate::options::{Deadline, ExternalPlacement, JobOptions, Place, Placement};
use crate::reason::CancelReason;
use crate::scope::{Dispatch, NativeScope, ScopeState};
use crate::spawn_error::SpawnError;
use crate::spawner::{Runnable, Spawner, submit};
use crate::sync::Arc;
use crate::thread_spawner::ThreadSpawner;
use crate::token::{CancelSource, CancelToken};

/// Starts `f` where `options` place it, and returns its handle: on a thread of its own
/// ([`Unplaced`](crate::Unplaced), the default here: [`ThreadSpawner`]'s), through a [`Spawner`]
/// ([`JobOptions::on`]), or in a [`NativeScope`](crate::NativeScope) ([`JobOptions::in_scope`]),
/// with every other option honoured. Each runtime adapter's `spawn_native_with` takes the same
/// options and runs an unplaced job on its runtime's blocking pool instead.
///
/// # Errors
///
/// [`SpawnError`]: the spawner's refusal (no thread from the OS, a runtime shutting down, a
/// scope that was shut down), or a deadline the crate's timer thread could not be started for.
/// The closure never runs then.
///
/// ```
/// use tethered::{CancelSource, JobOptions, ThreadSpawner};
///
/// let request = CancelSource::new();
/// let job = tethered::spawn(
///     JobOptions::new().name("sum").child_of(&request.token()).on(ThreadSpawner::new()),
///     |_token| 2 * 21,
/// )?;
/// assert_eq!(job.join_blocking()?, 42);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn spawn<P, T, F>(options: JobOptions<P>, f: F) -> Result<AbortableNative<T>, SpawnError>
where
    P: Placement,
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    spawn_or(options, || Ok(ThreadSpawner::new()), f)
}

/// [`spawn`](crate::spawn), with `default` giving the spawner for an
/// [`Unplaced`](crate::Unplaced) job: how a runtime adapter's `spawn_native_with` puts jobs on
/// its runtime's blocking pool. `default` is called only for an unplaced job, so a job placed
/// in a scope or on a spawner never needs a runtime.
///
/// # Errors
///
/// `default`'s error (no runtime here), or [`spawn`](crate::spawn)'s.
///
/// ```
/// use tethered::{JobOptions, SpawnError, ThreadSpawner};
///
/// /// An adapter's entry point: unplaced jobs run on threads named `pool`.
/// fn spawn_on_my_pool<T: Send + 'static>(
///     options: JobOptions,
///     f: impl FnOnce(tethered::CancelToken) -> T + Send + 'static,
/// ) -> Result<tethered::AbortableNative<T>, SpawnError> {
///     tethered::__private::spawn_or(options, || Ok(ThreadSpawner::new().name("pool")), f)
/// }
/// let job = spawn_on_my_pool(JobOptions::new(), |_| std::thread::current().name().map(str::to_owned))?;
/// assert_eq!(job.join_blocking()?.as_deref(), Some("pool"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn spawn_or<P, S, D, T, F>(
    options: JobOptions<P>,
    default: D,
    f: F,
) -> Result<AbortableNative<T>, SpawnError>
where
    P: Placement,
    S: Spawner,
    D: FnOnce() -> Result<S, SpawnError>,
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    let (options, place) = options.unplaced();
    match place {
        Place::Default => spawn_with(&default()?, options, None, f),
        Place::Spawner(spawner) => spawn_with(&*spawner, options, None, f),
        Place::Scope(scope) => {
            let generation = scope.generation();
            let observer: Arc<dyn FinishObserver> = scope.clone();
            let (job, runnable) = prepare(&options, Some(&generation), Some(observer), f)?;
            drop(generation);
            in_scope(&scope, job, runnable, Dispatch::Spawner)
        }
    }
}

/// Starts `f` through `spawner`, for a job of a scope (`observer`) or none.
pub(crate) fn spawn_with<S, T, F>(
    spawner: &S,
    options: JobOptions,
    observer: Option<Arc<dyn FinishObserver>>,
    f: F,
) -> Result<AbortableNative<T>, SpawnError>
where
    S: Spawner + ?Sized,
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    let (job, task) = prepare(&options, None, observer, f)?;
    if let Err(err) = submit(spawner, task) {
        // Refused: the job finishes unrun at once.
        job.stop_unrun(CancelReason::Shutdown);
        return Err(err);
    }
    accepted(job, spawner)
}

/// Makes the job and its task, before any spawner sees it: its token (a child of `first`, if
/// given, and of every parent of the options), its settings, and its deadline.
///
/// # Errors
///
/// [`SpawnError::Timer`] if the options' deadline could not be armed.
fn prepare<T, F>(
    options: &JobOptions,
    first: Option<&CancelToken>,
    observer: Option<Arc<dyn FinishObserver>>,
    f: F,
) -> Result<(Arc<Job<T, F>>, Runnable), SpawnError>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    let job = make(options, first, observer, f)?;
    let task = Runnable::new(job.clone());
    Ok((job, task))
}

/// Makes a job: its token, its settings, its registrations and its deadline.
fn make<T, F>(
    options: &JobOptions,
    first: Option<&CancelToken>,
    observer: Option<Arc<dyn FinishObserver>>,
    f: F,
) -> Result<Arc<Job<T, F>>, SpawnError>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    let source = CancelSource::any_of(first.into_iter().chain(&options.parents));
    let settings = Settings {
        name: options.name.clone(),
        grace: options.grace,
        outside_cancels: first.is_some()
            || !options.parents.is_empty()
            || options.deadline.is_some(),
        panic: options.panic,
    };
    let job = Arc::new(Job::new(f, source, settings, observer));
    job.watch();
    if let Some(deadline) = options.deadline {
        arm_deadline(&job, deadline)?;
    }
    Ok(job)
}

/// Cancels `job` with `Timeout` at `deadline`: at once if it has passed, so that the closure of
/// a job whose deadline is already gone never runs.
fn arm_deadline<J: JobControl + 'static>(
    job: &Arc<J>,
    deadline: Deadline,
) -> Result<(), SpawnError> {
    let Some(at) = deadline.instant() else {
        return Ok(());
    };
    if at <= Instant::now() {
        job.source().state.record_deadline(at);
        job.source().cancel(CancelReason::Timeout);
        return Ok(());
    }
    let control: Arc<dyn JobControl> = job.clone();
    cancel_at(&job.source().token(), Arc::downgrade(&control), at).map_err(|err| {
        job.stop_unrun(CancelReason::Shutdown);
        SpawnError::Timer(err)
    })
}

/// The handle of a job whose task a spawner accepted (or a scope queued).
/// Lists `job` in `scope` (which hands `runnable` out now, or once a slot frees) and returns
/// its handle.
fn in_scope<T, F>(
    scope: &ScopeState,
    job: Arc<Job<T, F>>,
    runnable: Runnable,
    dispatch: Dispatch,
) -> Result<AbortableNative<T>, SpawnError>
where
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    scope.admit(&job, runnable, dispatch)?;
    let handle = accepted(job.clone(), scope.spawner())?;
    // A cancel that came before the job was accepted (while it was being handed out) left a
    // waiting job in place: it leaves now, rather than when a slot frees.
    if job.source().is_cancelled() {
        job.finish_if_queued();
    }
    Ok(handle)
}

fn accepted<S, T, F>(job: Arc<Job<T, F>>, spawner: &S) -> Result<AbortableNative<T>, SpawnError>
where
    S: Spawner + ?Sized,
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    // `accept` fails only when the spawner dropped the task while spawning it.
    job.accept().map_err(|_| spawner.refused())?;
    Ok(AbortableNative::handle(job))
}

/// A job whose work runs elsewhere (a process supervisor, a foreign event loop, a device),
/// started where `options` place it: `start` gets the job's [`Completer`] at once, on this
/// thread, for an [`Unplaced`](crate::Unplaced) job; in a [`NativeScope`](crate::NativeScope)
/// ([`JobOptions::in_scope`]), once the scope has a slot for it (at once, or on the scope's
/// spawner when one frees), and the job holds the slot until it completes, so
/// [`NativeScope::with_max_running`](crate::NativeScope::with_max_running) bounds how much of
/// that work exists at once. A job cancelled while it waits finishes stopped
/// (`Cancelled { returned: None, .. }`) and `start` is dropped, never called.
///
/// The job is tethered, counted, cancelled and named like any other, and its stop reads the
/// same way; the work hears cancels through [`Completer::token`]. Every option applies; a
/// placement on a spawner is refused at compile time (no spawner runs such work).
///
/// `start` should only begin the work (hand it to a thread, a loop, a supervisor) and return. A
/// panic in it drops the completer, which finishes the job as stopped.
///
/// # Errors
///
/// [`SpawnError::ScopeClosed`] once the scope is shut down; [`SpawnError::Timer`] for a
/// deadline that could not be armed.
///
/// ```
/// use tethered::{CancelReason, CancelSource, JobOptions};
///
/// let server = CancelSource::new();
/// let (completer_tx, completer_rx) = std::sync::mpsc::channel();
/// let job = tethered::spawn_external(JobOptions::new().child_of(&server.token()), move |c| {
///     completer_tx.send(c).unwrap()
/// })?;
/// // The work's side, on a thread of its own: stop when told, report what was done.
/// let worker = std::thread::spawn(move || {
///     let completer: tethered::Completer<String> = completer_rx.recv().unwrap();
///     let reason = completer.token().wait();
///     completer.complete(format!("stopped: {reason}"));
/// });
/// server.cancel(CancelReason::Shutdown);
/// let err = job.join_blocking().unwrap_err();
/// assert_eq!(err.cancel_reason(), Some(CancelReason::Shutdown));
/// assert!(err.returned().is_some_and(|done| done.starts_with("stopped")));
/// worker.join().unwrap();
/// # Ok::<(), tethered::SpawnError>(())
/// ```
#[expect(
    clippy::missing_panics_doc,
    reason = "a job no spawner saw is always accepted: the expect never fires"
)]
pub fn spawn_external<P, T, S>(
    options: JobOptions<P>,
    start: S,
) -> Result<AbortableNative<T>, SpawnError>
where
    P: ExternalPlacement,
    T: Send + 'static,
    S: FnOnce(Completer<T>) + Send + 'static,
{
    let (options, place) = options.unplaced();
    match place {
        Place::Default => {
            let job = make(&options, None, None, external_placeholder())?;
            job.accept()
                .expect("a job that no spawner saw cannot have been refused");
            let handle = AbortableNative::handle(job.clone());
            if !job.begin_external() {
                // Cancelled before it began (a deadline already past, a cancelled parent): the
                // work never starts, as a closure never runs, and `start` is dropped uncalled.
                drop_contained(start);
                return Ok(handle);
            }
            let completer = Completer::new(job);
            // User code: a panic drops the completer while unwinding, which finishes the job
            // as stopped.
            run_contained(move || start(completer));
            Ok(handle)
        }
        Place::Scope(scope) => {
            let generation = scope.generation();
            let observer: Arc<dyn FinishObserver> = scope.clone();
            let job = make(
                &options,
                Some(&generation),
                Some(observer),
                external_placeholder::<T>(),
            )?;
            drop(generation);
            let runnable = Runnable::new(Arc::new(Deferred::new(job.clone(), start)));
            in_scope(&scope, job, runnable, Dispatch::Inline)
        }
        Place::Spawner(_) => unreachable!("`ExternalPlacement` has no spawner placement"),
    }
}

impl<T: Send + 'static> AbortableNative<T> {
    /// Runs `f` on a `std` thread of its own ([`ThreadSpawner`]'s): a thread per job, the shortcut for
    /// [`spawn`]`(JobOptions::new(), f)` as `std::thread::spawn` is for `thread::Builder`.
    ///
    /// For a program with no async runtime, a test, or a few long jobs. A server, or anything
    /// that starts many jobs, runs them on a pool instead: an adapter's `spawn_native`
    /// (`tethered_tokio::spawn_native` on tokio's blocking pool) or a
    /// [`NativeScope`](crate::NativeScope).
    ///
    /// # Panics
    ///
    /// Only where [`std::thread::spawn`] would: if the OS cannot start a thread. Use
    /// [`spawn`] to get the error instead.
    ///
    /// ```
    /// let job = tethered::AbortableNative::spawn(|_token| "done");
    /// assert_eq!(futures_executor::block_on(job).unwrap(), "done");
    /// ```
    pub fn spawn<F>(f: F) -> Self
    where
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        spawn_with(&ThreadSpawner::new(), JobOptions::new(), None, f)
            .unwrap_or_else(|err| panic!("failed to spawn thread: {err}"))
    }

    /// A handle that has already finished as stopped before it ran:
    /// `Err(NativeError::Cancelled { reason, returned: None, .. })`, counted in
    /// [`stats()`](crate::stats) as a job spawned and cancelled.
    ///
    /// For an entry point that cannot return an error, whose spawner refused the job: every
    /// adapter's `spawn_native` hands out `AbortableNative::stopped(CancelReason::Shutdown)`
    /// once its runtime shuts down, as tokio's own `spawn_blocking` handle then resolves to a
    /// cancelled `JoinError`.
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason, Tethered};
    ///
    /// let job = AbortableNative::<u32>::stopped(CancelReason::Shutdown);
    /// assert!(job.is_finished());
    /// let err = job.join_blocking().unwrap_err();
    /// assert_eq!(err.cancel_reason(), Some(CancelReason::Shutdown));
    /// assert!(err.returned().is_none());
    /// ```
    pub fn stopped(reason: CancelReason) -> Self {
        Self::stopped_because(reason, None)
    }

    /// [`stopped`](Self::stopped) with a [`Cause`](crate::Cause) beside the reason: for an
    /// entry point whose work cannot be done (a worker pool that gave up hands out its
    /// requests stopped with [`CancelReason::Failed`] and why).
    ///
    /// ```
    /// use tethered::{AbortableNative, CancelReason, Cause};
    ///
    /// let job = AbortableNative::<u32>::stopped_with_cause(CancelReason::Failed, Cause::msg("no worker starts"));
    /// let err = job.join_blocking().unwrap_err();
    /// assert_eq!(err.cause().unwrap().to_string(), "no worker starts");
    /// ```
    pub fn stopped_with_cause(reason: CancelReason, cause: impl Into<crate::Cause>) -> Self {
        Self::stopped_because(reason, Some(cause.into()))
    }

    fn stopped_because(reason: CancelReason, cause: Option<crate::Cause>) -> Self {
        let job = make(&JobOptions::new(), None, None, |_| {
            unreachable!("a job made stopped never runs its closure")
        })
        .expect("a job without a deadline needs no timer");
        job.source().state.cancel(reason, cause);
        job.finish_if_queued();
        job.accept_refused();
        Self::handle(job)
    }
}

impl NativeScope {
    /// Starts `f` in the scope, on the scope's spawner: the way a server runs its native jobs
    /// (one scope for the server, bounded with [`with_max_running`](Self::with_max_running),
    /// cancelled and shut down as one).
    ///
    /// The shortcut for [`spawn`](crate::spawn)`(JobOptions::new().in_scope(self), f)`: use
    /// that (or an adapter's `spawn_native_with`) for a named job, a deadline, a grace or a
    /// request's token as well.
    ///
    /// # Errors
    ///
    /// [`SpawnError::ScopeClosed`] once the scope is shut down, or the spawner's refusal.
    pub fn spawn<T, F>(&self, f: F) -> Result<AbortableNative<T>, SpawnError>
    where
        T: Send + 'static,
        F: FnOnce(CancelToken) -> T + Send + 'static,
    {
        spawn(JobOptions::new().in_scope(self), f)
    }
}

/// The handle an entry point that cannot return an error hands out: the spawned job, or, if a
/// pool that shuts down refused it ([`SpawnError::Shutdown`], [`SpawnError::Rejected`],
/// [`SpawnError::ScopeClosed`]), a handle already stopped with [`CancelReason::Shutdown`]
/// ([`AbortableNative::stopped`]), as tokio's own `spawn_blocking` handle then resolves to a
/// cancelled `JoinError`. Every adapter's `spawn_native` ends with it, so a `Drop` that
/// schedules clean-up while its runtime shuts down cannot abort the process.
///
/// # Panics
///
/// On any other error, with its message: no runtime ([`SpawnError::NoRuntime`]), no thread
/// from the OS ([`SpawnError::Thread`]), a spawner's own error. `spawn_blocking` and
/// `std::thread::spawn` panic there too.
///
/// ```
/// use tethered::{CancelReason, JobOptions, Runnable, SpawnError, Spawner};
///
/// struct Closed;
/// impl Spawner for Closed {
///     fn spawn(&self, _task: Runnable) -> Result<(), SpawnError> {
///         Err(SpawnError::shutdown("example pool"))
///     }
/// }
///
/// let job = tethered::__private::spawned_or_stopped(tethered::spawn(JobOptions::new().on(Closed), |_| 1));
/// let err = job.join_blocking().unwrap_err();
/// assert_eq!(err.cancel_reason(), Some(CancelReason::Shutdown));
/// ```
#[track_caller]
pub fn spawned_or_stopped<T: Send + 'static>(
    spawned: Result<AbortableNative<T>, SpawnError>,
) -> AbortableNative<T> {
    match spawned {
        Ok(job) => job,
        Err(SpawnError::Shutdown { .. } | SpawnError::Rejected | SpawnError::ScopeClosed) => {
            AbortableNative::stopped(CancelReason::Shutdown)
        }
        Err(err) => panic!("{}", crate::reason::error_chain(&err)),
    }
}
