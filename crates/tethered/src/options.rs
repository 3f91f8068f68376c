//! [`JobOptions`]: the one value that says how to start a job, accepted by every way to start
//! work in every crate of the family.
//!
//! Where the job runs is part of the value's type ([`Unplaced`], [`OnSpawner`], [`InScope`]), so
//! an entry point that cannot honour a placement refuses it at compile time: a child process
//! runs in its own process, so `tethered-process` takes no `JobOptions<OnSpawner>`.

use std::fmt;
use std::marker::PhantomData;
use std::time::{Duration, Instant};

use crate::panic::PanicPolicy;
use crate::scope::{NativeScope, ScopeState};
use crate::spawner::Spawner;
use crate::sync::Arc;
use crate::token::CancelToken;

/// How to start a job: where it runs, its name, its deadline, how long its caller waits for it
/// after a cancel, the tokens it is a child of, and what a panic does. One value, accepted by
/// every way to start work: [`spawn`](crate::spawn), every adapter's `spawn_native_with`,
/// `tethered-process`'s jobs and pool turns, `tethered-pyo3` and `tethered-napi`. Every option
/// is honoured wherever the value is accepted, or the value is refused at compile time.
///
/// ```
/// use std::time::Duration;
/// use tethered::{CancelReason, CancelSource, JobOptions, NativeError};
///
/// let request = CancelSource::new();
/// let options = JobOptions::new()
///     .name("render-7")                     // its thread's name while it runs, reports, traces
///     .child_of(&request.token())           // stops with the request, with its reason
///     .timeout(Duration::from_millis(20))   // cancelled with `Timeout` 20 ms after the spawn
///     .grace(Duration::from_secs(5));       // then its caller waits at most 5 s for it
/// let job = tethered::spawn(options, |token| {
///     let mut frames = 0u64;
///     while !token.is_cancelled() {
///         frames += 1;
///     }
///     frames
/// })?;
/// let err = job.join_blocking().unwrap_err();
/// assert_eq!(err.cancel_reason(), Some(CancelReason::Timeout));
/// # Ok::<(), tethered::SpawnError>(())
/// ```
///
/// The value is cheap to clone (a few reference counts), so a server builds one per kind of
/// work and clones it per request.
#[must_use = "options do nothing until a job is started with them"]
pub struct JobOptions<P = Unplaced> {
    pub(crate) name: Option<Arc<str>>,
    pub(crate) deadline: Option<Deadline>,
    pub(crate) grace: Option<Duration>,
    pub(crate) parents: Vec<CancelToken>,
    pub(crate) panic: PanicPolicy,
    pub(crate) place: Place,
    placement: PhantomData<fn() -> P>,
}

/// When a job's deadline falls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Deadline {
    /// This long after the spawn.
    After(Duration),
    At(Instant),
}

impl Deadline {
    /// The instant, for a spawn now; `None` for a timeout too long for an `Instant` (never).
    pub(crate) fn instant(self) -> Option<Instant> {
        match self {
            Deadline::After(timeout) => Instant::now().checked_add(timeout),
            Deadline::At(at) => Some(at),
        }
    }
}

/// Where a job runs (the data behind the placement in [`JobOptions`]'s type).
#[derive(Clone)]
pub(crate) enum Place {
    /// Where the entry point runs jobs by default.
    Default,
    Spawner(Arc<dyn Spawner + Send + Sync>),
    Scope(Arc<ScopeState>),
}

// Options are a plain value; the spawner in them is called only by a spawn, with no lock held,
// and a panic in it is contained (see `ScopeState`).
impl std::panic::UnwindSafe for Place {}
impl std::panic::RefUnwindSafe for Place {}

/// The placement of [`JobOptions`] that leaves the choice to the entry point: a thread of its
/// own for [`spawn`](crate::spawn), the runtime's blocking pool for an adapter's
/// `spawn_native_with`, the child's own process for `tethered-process`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unplaced;

/// The placement of [`JobOptions`] made by [`JobOptions::on`]: the job runs through a
/// [`Spawner`] of your choosing.
#[derive(Clone, Copy, Debug, Default)]
pub struct OnSpawner;

/// The placement of [`JobOptions`] made by [`JobOptions::in_scope`]: the job runs in a
/// [`NativeScope`], on the scope's spawner, counted, bounded and shut down with it.
#[derive(Clone, Copy, Debug, Default)]
pub struct InScope;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Unplaced {}
    impl Sealed for super::OnSpawner {}
    impl Sealed for super::InScope {}
}

/// A placement of [`JobOptions`]: [`Unplaced`], [`OnSpawner`] or [`InScope`]. Sealed: the
/// three are all there is.
pub trait Placement: sealed::Sealed {}
impl Placement for Unplaced {}
impl Placement for OnSpawner {}
impl Placement for InScope {}

/// A placement fit for work that runs elsewhere (a child process, a foreign event loop), which
/// no [`Spawner`] runs: [`Unplaced`] or [`InScope`]. Sealed.
#[diagnostic::on_unimplemented(
    message = "work that runs elsewhere cannot be placed on a spawner",
    label = "`JobOptions::on(..)` makes `JobOptions<OnSpawner>`",
    note = "a child process or a foreign loop is not run by a `Spawner`: leave `.on(..)` out, or start it `.in_scope(..)` to bound it"
)]
pub trait ExternalPlacement: Placement {}
impl ExternalPlacement for Unplaced {}
impl ExternalPlacement for InScope {}

impl JobOptions {
    /// Options with nothing set: no name, no deadline, a caller that waits for the closure as
    /// long as it takes, no parent token, [`PanicPolicy::Catch`], and the entry point's own
    /// placement.
    pub fn new() -> Self {
        JobOptions {
            name: None,
            deadline: None,
            grace: None,
            parents: Vec::new(),
            panic: PanicPolicy::Catch,
            place: Place::Default,
            placement: PhantomData,
        }
    }

    /// Runs the job through `spawner`: a runtime's blocking pool (`TokioSpawner`,
    /// `SmolSpawner`, `AsyncStdSpawner`), a [`ThreadSpawner`](crate::ThreadSpawner), a pool of
    /// your own.
    ///
    /// ```
    /// use tethered::{JobOptions, ThreadSpawner};
    ///
    /// let options = JobOptions::new().on(ThreadSpawner::new().name("sandbox"));
    /// let job = tethered::spawn(options, |_| std::thread::current().name().map(str::to_owned))?;
    /// assert_eq!(job.join_blocking()?.as_deref(), Some("sandbox"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn on<S>(self, spawner: S) -> JobOptions<OnSpawner>
    where
        S: Spawner + Send + Sync + 'static,
    {
        self.placed(Place::Spawner(Arc::new(spawner)))
    }

    /// Runs the job in `scope`: on the scope's spawner once a slot is free (if the scope is
    /// bounded), cancelled with the scope's other jobs, counted in its stats and named in its
    /// shutdown report. The job's token is a child of the scope's and of any
    /// [`child_of`](Self::child_of) parent too.
    ///
    /// ```
    /// use tethered::{JobOptions, NativeScope};
    ///
    /// let scope = NativeScope::new();
    /// let job = tethered::spawn(JobOptions::new().name("sum").in_scope(&scope), |_| 1 + 1)?;
    /// assert_eq!(job.join_blocking()?, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn in_scope(self, scope: &NativeScope) -> JobOptions<InScope> {
        self.placed(Place::Scope(scope.state.clone()))
    }
}

impl<P> JobOptions<P> {
    /// Names the job. While its closure runs, the thread it runs on carries the name (on
    /// Linux, whatever the pool: a tokio, smol or rayon thread reads as the job in `top -H`,
    /// `ps -L` and a debugger; the kernel keeps its first 15 bytes), and gets its own name back
    /// when the closure returns. The name also shows in `Debug` output,
    /// [`ShutdownReport`](crate::ShutdownReport)s and (with the `tracing` feature) the job's
    /// span. An unnamed job leaves its thread's name alone and pays nothing for it.
    ///
    /// ```
    /// # #[cfg(target_os = "linux")] {
    /// use tethered::{JobOptions, ThreadSpawner};
    ///
    /// let options = JobOptions::new().name("render-3").on(ThreadSpawner::new().name("pool"));
    /// let job = tethered::spawn(options, |_| {
    ///     std::fs::read_to_string("/proc/thread-self/comm").unwrap()
    /// })?;
    /// assert_eq!(job.join_blocking()?.trim_end(), "render-3");
    /// # }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The name given with [`name`](Self::name), or else `default`: for an entry point that
    /// names its jobs (a child process after its program, a pool's requests) unless the caller
    /// did.
    ///
    /// ```
    /// use tethered::JobOptions;
    ///
    /// let job = tethered::spawn(JobOptions::new().named_or("fallback"), |_| ())?;
    /// assert_eq!(job.name(), Some("fallback"));
    /// let job2 = tethered::spawn(JobOptions::new().name("mine").named_or("fallback"), |_| ())?;
    /// assert_eq!(job2.name(), Some("mine"));
    /// # job.join_blocking()?; job2.join_blocking()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn named_or(mut self, default: impl Into<Arc<str>>) -> Self {
        if self.name.is_none() {
            self.name = Some(default.into());
        }
        self
    }

    /// Cancels the job with [`CancelReason::Timeout`](crate::CancelReason::Timeout) `timeout`
    /// after it is started (queued time counts), unless it finished first. The job's token
    /// carries the deadline ([`CancelToken::deadline`]), for the job to pass on to work it
    /// starts. A `timeout` too long for an `Instant` (`Duration::MAX`) never fires; zero
    /// cancels it as it starts, and its closure never runs. Replaces an earlier
    /// [`deadline`](Self::deadline).
    ///
    /// The handle then waits for the closure to return, for at most the
    /// [`grace`](Self::grace) if one is set.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.deadline = Some(Deadline::After(timeout));
        self
    }

    /// Cancels the job with [`CancelReason::Timeout`](crate::CancelReason::Timeout) at
    /// `deadline`, unless it finished first: [`timeout`](Self::timeout) at an instant. A
    /// deadline that has passed cancels the job as it starts. Replaces an earlier
    /// [`timeout`](Self::timeout).
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use tethered::{CancelReason, JobOptions, Tethered};
    ///
    /// let request_deadline = Instant::now() + Duration::from_millis(10);
    /// let job = tethered::spawn(JobOptions::new().deadline(request_deadline), |t| t.wait())?;
    /// assert_eq!(job.token().deadline(), Some(request_deadline));
    /// assert_eq!(job.join_blocking().unwrap_err().cancel_reason(), Some(CancelReason::Timeout));
    /// # Ok::<(), tethered::SpawnError>(())
    /// ```
    pub fn deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(Deadline::At(deadline));
        self
    }

    /// The grace: once the job is cancelled (by anything), its caller waits at most `grace` for
    /// the closure to return, then its handle resolves to
    /// [`NativeError::Abandoned`](crate::NativeError::Abandoned) and the job counts as detached
    /// in [`stats()`](crate::stats) until the closure returns. Never silent: the error, the
    /// counter and a tracing event all say so.
    ///
    /// Without it (the default), the handle resolves only when the closure has returned. A
    /// `grace` too long for an `Instant` (`Duration::MAX`) never abandons; zero abandons as
    /// soon as the cancel is seen.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tethered::{CancelReason, JobOptions, NativeError, Tethered};
    ///
    /// let (started_tx, started) = std::sync::mpsc::channel();
    /// let (release, stuck) = std::sync::mpsc::channel::<()>();
    /// let job = tethered::spawn(JobOptions::new().grace(Duration::from_millis(20)), move |_| {
    ///     started_tx.send(()).unwrap();
    ///     stuck.recv() // ignores its token
    /// })?;
    /// started.recv().unwrap();
    /// job.cancel(CancelReason::Timeout);
    /// let err = job.join_blocking().unwrap_err();
    /// assert!(matches!(err, NativeError::Abandoned { reason: CancelReason::Timeout, .. }));
    /// release.send(()).unwrap();
    /// # Ok::<(), tethered::SpawnError>(())
    /// ```
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = Some(grace);
        self
    }

    /// The grace given with [`grace`](Self::grace), or else `default`: for an entry point whose
    /// callers expect another wait than "as long as the closure takes". `tethered-napi` reads
    /// an unset grace as zero, since a JavaScript promise rejects as its `AbortSignal` aborts,
    /// as the platform's own operations do.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tethered::{CancelReason, JobOptions, NativeError, Tethered};
    ///
    /// let (started_tx, started) = std::sync::mpsc::channel();
    /// let (release, stuck) = std::sync::mpsc::channel::<()>();
    /// let job = tethered::spawn(JobOptions::new().grace_or(Duration::ZERO), move |_| {
    ///     started_tx.send(()).unwrap();
    ///     stuck.recv() // ignores its token
    /// })?;
    /// started.recv().unwrap();
    /// job.cancel(CancelReason::Dropped);
    /// // A grace of zero: the handle stopped waiting as the cancel came.
    /// assert!(matches!(job.join_blocking(), Err(NativeError::Abandoned { .. })));
    /// release.send(()).unwrap();
    /// # Ok::<(), tethered::SpawnError>(())
    /// ```
    pub fn grace_or(mut self, default: Duration) -> Self {
        if self.grace.is_none() {
            self.grace = Some(default);
        }
        self
    }

    /// Ties the job to an outer token: the job runs on its own child token of `parent`, so
    /// cancelling `parent` cancels the job with its reason and cause, and dropping, cancelling
    /// or finishing the job never touches `parent` or its other children. Given more than
    /// once, the job is a child of each: the first parent to be cancelled stops it (see
    /// [`CancelSource::any_of`](crate::CancelSource::any_of)), and its deadline is the
    /// earliest of theirs.
    ///
    /// ```
    /// use tethered::{CancelReason, CancelSource, JobOptions};
    ///
    /// let request = CancelSource::new();
    /// let server = CancelSource::new();
    /// let options = JobOptions::new().child_of(&request.token()).child_of(&server.token());
    /// let job = tethered::spawn(options, |token| token.wait())?;
    /// server.cancel(CancelReason::Shutdown);
    /// assert_eq!(job.join_blocking().unwrap_err().cancel_reason(), Some(CancelReason::Shutdown));
    /// assert!(!request.is_cancelled());
    /// # Ok::<(), tethered::SpawnError>(())
    /// ```
    pub fn child_of(mut self, parent: &CancelToken) -> Self {
        self.parents.push(parent.clone());
        self
    }

    /// What a panic in the closure does (default [`PanicPolicy::Catch`]).
    pub fn panic(mut self, policy: PanicPolicy) -> Self {
        self.panic = policy;
        self
    }

    /// The panic policy these options give ([`PanicPolicy::Catch`] unless set), for a bridge
    /// that must know whether a panic of the job is caught or ends the process.
    ///
    /// ```
    /// use tethered::{JobOptions, PanicPolicy};
    ///
    /// assert_eq!(JobOptions::new().panic_policy(), PanicPolicy::Catch);
    /// assert_eq!(JobOptions::new().panic(PanicPolicy::Abort).panic_policy(), PanicPolicy::Abort);
    /// ```
    pub fn panic_policy(&self) -> PanicPolicy {
        self.panic
    }

    pub(crate) fn placed<Q>(self, place: Place) -> JobOptions<Q> {
        JobOptions {
            name: self.name,
            deadline: self.deadline,
            grace: self.grace,
            parents: self.parents,
            panic: self.panic,
            place,
            placement: PhantomData,
        }
    }

    /// The same options with the entry point's own placement: what a bridge does with options
    /// it honours everything of but a placement it handles itself.
    pub(crate) fn unplaced(self) -> (JobOptions, Place) {
        let place = self.place.clone();
        (self.placed(Place::Default), place)
    }
}

impl Default for JobOptions {
    fn default() -> Self {
        JobOptions::new()
    }
}

impl<P> Clone for JobOptions<P> {
    fn clone(&self) -> Self {
        JobOptions {
            name: self.name.clone(),
            deadline: self.deadline,
            grace: self.grace,
            parents: self.parents.clone(),
            panic: self.panic,
            place: self.place.clone(),
            placement: PhantomData,
        }
    }
}

impl<P> fmt::Debug for JobOptions<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let place = match &self.place {
            Place::Default => "default",
            Place::Spawner(_) => "spawner",
            Place::Scope(_) => "scope",
        };
        f.debug_struct("JobOptions")
            .field("name", &self.name)
            .field("deadline", &self.deadline)
            .field("grace", &self.grace)
            .field("parents", &self.parents.len())
            .field("panic", &self.panic)
            .field("place", &place)
            .finish()
    }
}
