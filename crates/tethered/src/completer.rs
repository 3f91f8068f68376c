//! [`Completer`]: the publishing side of a job whose work runs elsewhere (a process
//! supervisor, a foreign event loop), made by [`spawn_external`](crate::spawn_external).

use std::fmt;

use crate::job::{External, Job};
use crate::sync::Arc;
use crate::token::CancelToken;

/// Publishes the result of a job whose work runs elsewhere: the counterpart of its
/// [`AbortableNative`](crate::AbortableNative) handle, handed to the start function of
/// [`spawn_external`](crate::spawn_external).
///
/// The job counts as running in [`stats()`](crate::stats) from the moment it is made until it
/// completes. Whoever runs the work watches [`token`](Self::token) (with
/// [`CancelToken::on_cancel`] to push a cancel into the work, or a check in its loop) and
/// calls [`complete`](Self::complete) once the work has stopped; the handle then reads as
/// every handle does (see [`NativeError`](crate::NativeError)): `Ok(value)` if no cancel came
/// first, `Err(Cancelled { reason, returned: Some(value), .. })` if one did.
///
/// Dropping it without completing (the work was lost: its thread died, its loop closed)
/// finishes the job as stopped with nothing returned: with the cancel's reason if the token
/// was cancelled, or else with [`CancelReason::Shutdown`](crate::CancelReason::Shutdown) (the
/// job's token is cancelled with it).
///
/// ```
/// use tethered::{CancelReason, Completer, JobOptions, NativeError, Tethered};
///
/// // Work that some other thread (an event loop, a supervisor) carries out and reports.
/// let job = tethered::spawn_external(JobOptions::new().name("remote-7"), |completer: Completer<u32>| {
///     std::thread::spawn(move || {
///         let token = completer.token().clone();
///         let mut steps = 0;
///         while !token.is_cancelled() && steps < 1_000_000 {
///             steps += 1;
///         }
///         completer.complete(steps);
///     });
/// })?;
/// match job.join_blocking() {
///     Ok(steps) => assert_eq!(steps, 1_000_000),
///     Err(err) => panic!("nothing cancelled it: {err}"),
/// }
///
/// // A cancel reaches the worker through the token, and the stop reads as any job's:
/// let (tx, rx) = std::sync::mpsc::channel();
/// let job = tethered::spawn_external(JobOptions::new(), move |c: Completer<&str>| tx.send(c).unwrap())?;
/// job.cancel(CancelReason::Timeout);
/// rx.recv().unwrap().complete("partial");
/// let err = job.join_blocking().unwrap_err();
/// assert!(matches!(err, NativeError::Cancelled { reason: CancelReason::Timeout, .. }));
/// assert_eq!(err.into_returned(), Some("partial"));
/// # Ok::<(), tethered::SpawnError>(())
/// ```
#[must_use = "dropping the completer finishes its job as stopped"]
pub struct Completer<T: Send + 'static> {
    job: Option<Arc<Job<T, External<T>>>>,
    token: CancelToken,
}

// As for `AbortableNative`: the job's state changes only under its lock, never half-way
// through by a panic, whatever `T` is.
impl<T: Send + 'static> std::panic::UnwindSafe for Completer<T> {}
impl<T: Send + 'static> std::panic::RefUnwindSafe for Completer<T> {}

impl<T: Send + 'static> Completer<T> {
    pub(crate) fn new(job: Arc<Job<T, External<T>>>) -> Self {
        let token = job.token();
        Completer {
            job: Some(job),
            token,
        }
    }

    /// The job's token: cancelled when the job is (its handle dropped or cancelled, a
    /// deadline, a parent token).
    pub fn token(&self) -> &CancelToken {
        &self.token
    }

    /// Whether the job's token was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.token.is_cancelled()
    }

    /// Counts the work as idle (`true`) or running (`false`) in [`stats()`](crate::stats): a
    /// worker process between two requests is alive but does nothing, and leak accounting
    /// should tell it from work that runs (a pool's idle workers read `idle`, not `running`).
    /// Returns `false` if the job is not running (it finished).
    ///
    /// ```
    /// use tethered::JobOptions;
    ///
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let job = tethered::spawn_external(JobOptions::new(), move |c| tx.send(c).unwrap())?;
    /// let completer: tethered::Completer<()> = rx.recv().unwrap();
    /// let before = tethered::stats().idle;
    /// assert!(completer.set_idle(true));
    /// assert_eq!(tethered::stats().idle, before + 1);
    /// completer.complete(()); // an idle job that completes leaves `idle`
    /// job.join_blocking()?;
    /// assert_eq!(tethered::stats().idle, before);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_idle(&self, idle: bool) -> bool {
        self.job.as_ref().is_some_and(|job| job.set_idle(idle))
    }

    /// Runs `f`, the job's work (or a part of it), on the calling thread as a spawned job's
    /// closure runs: the thread carries the job's [`name`](crate::JobOptions::name) while `f`
    /// runs (so `top -H` and a debugger show which job a pool's thread is busy with; its own
    /// name comes back after), inside the job's `tracing` span, and a panic in `f` is caught
    /// and returned, for [`panicked`](Self::panicked).
    ///
    /// ```
    /// use tethered::{Completer, JobOptions, NativeError};
    ///
    /// let job = tethered::spawn_external(JobOptions::new().name("render-7"), |completer: Completer<u64>| {
    ///     std::thread::spawn(move || {
    ///         let token = completer.token().clone();
    ///         // On Linux, this thread reads "render-7" in `top -H` while the work runs.
    ///         match completer.run(|| (0..1_000u64).take_while(|_| !token.is_cancelled()).sum()) {
    ///             Ok(sum) => completer.complete(sum),
    ///             Err(panic) => completer.panicked(panic),
    ///         }
    ///     });
    /// })?;
    /// assert_eq!(job.join_blocking()?, 499_500);
    ///
    /// let job = tethered::spawn_external(JobOptions::new(), |completer: Completer<u64>| {
    ///     match completer.run(|| -> u64 { panic!("the work failed") }) {
    ///         Ok(value) => completer.complete(value),
    ///         Err(panic) => completer.panicked(panic),
    ///     }
    /// })?;
    /// assert!(matches!(job.join_blocking(), Err(NativeError::Panicked(p)) if p.message() == Some("the work failed")));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The panic of `f`, caught.
    pub fn run<R>(&self, f: impl FnOnce() -> R) -> Result<R, crate::JobPanic> {
        match &self.job {
            Some(job) => job.run_here(f),
            None => crate::contain::catch_panic(f),
        }
    }

    /// Tells the job how to look, when a cancel comes, whether its work has finished though
    /// its result is not published yet: a child process that exited, not yet reaped. A cancel
    /// that finds `finished()` true changes nothing, as one that comes after a closure
    /// returned: the cancel returns `false`, the token is sealed (never cancelled), and the
    /// handle reads `Ok` once [`complete`](Self::complete) publishes the result. Without a
    /// check, the work counts as finished only once it completes, and a cancel in between
    /// stops it.
    ///
    /// `finished` runs on the cancelling thread, with no lock of this crate held, at most once
    /// per cancel (a panic in it reads as "not finished"); it should only look (a `waitid`
    /// with `WNOWAIT`, a flag), never block. A later call replaces the check; it is dropped
    /// once the job's token is cancelled or sealed.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// use tethered::{CancelReason, Completer, JobOptions, Tethered};
    ///
    /// let (tx, rx) = std::sync::mpsc::channel();
    /// let job = tethered::spawn_external(JobOptions::new(), move |c: Completer<&str>| tx.send(c).unwrap())?;
    /// let completer = rx.recv().unwrap();
    /// let done = Arc::new(AtomicBool::new(false));
    /// let seen = done.clone();
    /// completer.finished_check(move || seen.load(Ordering::Acquire));
    /// done.store(true, Ordering::Release); // the work finished; its result is on its way
    /// assert!(!job.cancel(CancelReason::Requested), "a cancel after the finish changes nothing");
    /// completer.complete("done");
    /// assert_eq!(job.join_blocking()?, "done");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn finished_check(&self, finished: impl Fn() -> bool + Send + Sync + 'static) {
        self.token.state.set_finished_check(Arc::new(finished));
    }

    /// Finishes the job with what the work produced, and wakes its handle.
    pub fn complete(mut self, value: T) {
        if let Some(job) = self.job.take() {
            job.complete(Some(value));
        }
    }

    /// Finishes the job as panicked, with the panic the work caught (see
    /// [`run`](Self::run)): the handle gives
    /// `Err(NativeError::Panicked(panic))`, as for a spawned closure that panicked.
    ///
    /// ```
    /// use tethered::{Completer, JobOptions, NativeError};
    ///
    /// let job = tethered::spawn_external(JobOptions::new(), |completer: Completer<u32>| {
    ///     match completer.run(|| -> u32 { panic!("the work failed") }) {
    ///         Ok(value) => completer.complete(value),
    ///         Err(panic) => completer.panicked(panic),
    ///     }
    /// })?;
    /// let err = job.join_blocking().unwrap_err();
    /// assert!(matches!(&err, NativeError::Panicked(panic) if panic.message() == Some("the work failed")));
    /// # Ok::<(), tethered::SpawnError>(())
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
