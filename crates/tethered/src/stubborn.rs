//! Work that a cancel reached, watched until it returns: the stubborn jobs, which still run
//! [`stubborn_after()`] past their cancel, and what `cancels.rs` counts and times.
//!
//! A job enters the watch when a cancel reaches it while its work runs (its closure started, or
//! its external work is under way) and leaves it when the work returns. If it still runs at
//! its deadline ([`stubborn_after()`] past the cancel), it is listed as stubborn (with the
//! `tracing` feature, a warning names it), and its return is reported again, with how long it
//! took. A job that is never cancelled while running never enters: the watch costs nothing on
//! a job's round trip.
//!
//! The watch is process-wide ([`PerProcess`]: a forked child starts its own), a map under a
//! lock, taken when a cancel reaches running work and when that work returns; nothing else.
//! One sweep on the crate's timer serves every watched job: it is scheduled for the earliest
//! deadline when none is pending, lists the jobs due, and schedules itself for the next. A
//! cancel whose job returns within its deadline (nearly all) never touches the timer, whose
//! every schedule wakes the timer's thread (a few microseconds). Under
//! `--cfg tethered_loom` nothing is watched: a model cannot hold the timer's thread, and the
//! watch decides nothing about a job.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::cancels::{self, Kind};
use crate::job_id::JobId;
use crate::per_process::PerProcess;
use crate::reason::{CancelReason, Cause};
use crate::timer::{self, TimerEntry};

/// A job cancelled and still running past [`stubborn_after()`], from [`stubborn_jobs()`]:
/// native code that does not look at its token, or not often enough.
///
/// ```
/// use std::time::Duration;
/// use tethered::{CancelReason, JobOptions, Tethered};
///
/// tethered::set_stubborn_after(Duration::from_millis(50));
/// let (release, wait) = std::sync::mpsc::channel::<()>();
/// let (started, running) = std::sync::mpsc::channel();
/// let job = tethered::spawn(JobOptions::new().name("legacy-scan"), move |_token| {
///     started.send(()).unwrap();
///     let _ = wait.recv(); // never looks at its token
/// })?;
/// running.recv().unwrap();
/// job.cancel(CancelReason::Timeout);
/// std::thread::sleep(Duration::from_millis(500));
/// let stubborn = tethered::stubborn_jobs();
/// let scan = stubborn.iter().find(|s| s.name.as_deref() == Some("legacy-scan")).unwrap();
/// assert_eq!(scan.reason, CancelReason::Timeout);
/// assert!(scan.since_cancel >= Duration::from_millis(50));
/// drop(release); // it returns: listed no more
/// job.join_blocking().unwrap_err();
/// assert!(tethered::stubborn_jobs().iter().all(|s| s.id != scan.id));
/// # tethered::set_stubborn_after(Duration::from_secs(1));
/// # Ok::<(), tethered::SpawnError>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct StubbornJob {
    /// The job's id.
    pub id: JobId,
    /// Its name ([`JobOptions::name`](crate::JobOptions::name)), if it has one.
    pub name: Option<String>,
    /// The reason its token read when the cancel reached it.
    pub reason: CancelReason,
    /// The cause that came with the cancel, if any.
    pub cause: Option<Cause>,
    /// How long ago the cancel reached it.
    pub since_cancel: Duration,
}

/// One watched job.
struct Watched {
    name: Option<Arc<str>>,
    reason: CancelReason,
    cause: Option<Cause>,
    cancelled_at: Instant,
    /// When it is listed if it still runs; `None`: never (`Duration::MAX`).
    due: Option<Instant>,
    /// Listed as stubborn (and reported so).
    stubborn: bool,
}

/// The watched jobs, and the one sweep that lists them when they are due.
struct Watch {
    jobs: HashMap<JobId, Watched>,
    /// The pending sweep and its deadline: at or before every unlisted job's `due`.
    sweep: Option<(Instant, TimerEntry)>,
}

static WATCH: PerProcess<Mutex<Watch>> = PerProcess::new(|| {
    Mutex::new(Watch {
        jobs: HashMap::new(),
        sweep: None,
    })
});

/// [`stubborn_after()`] in nanoseconds; `u64::MAX` for never.
static AFTER_NANOS: AtomicU64 = AtomicU64::new(DEFAULT_AFTER_NANOS);
const DEFAULT_AFTER_NANOS: u64 = 1_000_000_000;

fn watch() -> std::sync::MutexGuard<'static, Watch> {
    WATCH
        .get()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How long a job may run on after a cancel reached it before it is listed among the
/// [`stubborn_jobs()`] (and, with the `tracing` feature, reported by a warning): 1 s unless
/// [`set_stubborn_after`] changed it. A cancel is meant to be seen within milliseconds (one
/// atomic load per check); a job still running a second later is not looking.
///
/// ```
/// assert!(tethered::stubborn_after() > std::time::Duration::ZERO);
/// ```
pub fn stubborn_after() -> Duration {
    // ORDERING: Relaxed: a setting read on its own; nothing is published through it.
    match AFTER_NANOS.load(Ordering::Relaxed) {
        u64::MAX => Duration::MAX,
        nanos => Duration::from_nanos(nanos),
    }
}

/// Sets [`stubborn_after()`] for the cancels from now on (a job already watched keeps the
/// deadline it got). `Duration::ZERO` lists a job the moment a cancel reaches it while it
/// runs; `Duration::MAX` (anything past 584 years) lists none.
///
/// ```
/// use std::time::Duration;
/// tethered::set_stubborn_after(Duration::from_secs(5));
/// assert_eq!(tethered::stubborn_after(), Duration::from_secs(5));
/// tethered::set_stubborn_after(Duration::MAX);
/// assert_eq!(tethered::stubborn_after(), Duration::MAX);
/// # tethered::set_stubborn_after(Duration::from_secs(1));
/// ```
pub fn set_stubborn_after(after: Duration) {
    let nanos = u64::try_from(after.as_nanos()).unwrap_or(u64::MAX);
    // ORDERING: Relaxed, as in `stubborn_after`.
    AFTER_NANOS.store(nanos, Ordering::Relaxed);
}

/// The jobs cancelled and still running past [`stubborn_after()`] right now, the longest
/// cancelled first.
///
/// ```
/// // A process whose jobs all honour their cancels lists none.
/// assert!(tethered::stubborn_jobs().iter().all(|job| job.since_cancel > std::time::Duration::ZERO));
/// ```
pub fn stubborn_jobs() -> Vec<StubbornJob> {
    let now = Instant::now();
    let mut listed: Vec<StubbornJob> = watch()
        .jobs
        .iter()
        .filter(|(_, watched)| watched.stubborn)
        .map(|(id, watched)| StubbornJob {
            id: *id,
            name: watched.name.as_deref().map(str::to_owned),
            reason: watched.reason,
            cause: watched.cause.clone(),
            since_cancel: now.saturating_duration_since(watched.cancelled_at),
        })
        .collect();
    listed.sort_by_key(|job| std::cmp::Reverse(job.since_cancel));
    listed
}

/// A cancel reached job `id` while its work ran: counted, and watched until it returns.
pub(crate) fn cancel_reached(
    id: JobId,
    name: Option<Arc<str>>,
    reason: CancelReason,
    cause: Option<Cause>,
) {
    if cfg!(tethered_loom) {
        return;
    }
    cancels::count(Kind::ReachedRunning, reason);
    let cancelled_at = Instant::now();
    let due = cancelled_at.checked_add(stubborn_after());
    let needs_sweep = {
        let mut watch = watch();
        watch.jobs.insert(
            id,
            Watched {
                name,
                reason,
                cause,
                cancelled_at,
                due,
                stubborn: false,
            },
        );
        // A sweep pending at or before this deadline serves it too.
        due.filter(|&due| watch.sweep.as_ref().is_none_or(|(at, _)| due < *at))
    };
    if let Some(due) = needs_sweep {
        sweep_at(due);
    }
}

/// Schedules the sweep for `at`, unless one is pending at or before it by then; with no lock
/// held (the timer's lock is taken here, and a replaced entry is dropped here).
fn sweep_at(at: Instant) {
    // No timer thread (the OS refused one): jobs are still counted and timed, never listed.
    let Ok(entry) = timer::schedule(at, Box::new(sweep)) else {
        return;
    };
    let unused = {
        let mut watch = watch();
        match &watch.sweep {
            Some((pending, _)) if *pending <= at => Some(entry),
            _ => watch
                .sweep
                .replace((at, entry))
                .map(|(_, replaced)| replaced),
        }
    };
    // Removed from the timer (its lock): not under the watch's.
    drop(unused);
}

/// The sweep's deadline came: every job due and still running is stubborn; the next sweep is
/// scheduled for the earliest deadline left.
fn sweep() {
    let now = Instant::now();
    let (spent, due, next) = {
        let mut watch = watch();
        // The timer ran it: the entry is spent.
        let spent = watch.sweep.take();
        let mut due = Vec::new();
        let mut next: Option<Instant> = None;
        for (id, watched) in &mut watch.jobs {
            match watched.due {
                _ if watched.stubborn => {}
                Some(at) if at <= now => {
                    watched.stubborn = true;
                    due.push((
                        *id,
                        watched.name.clone(),
                        watched.reason,
                        watched.cause.clone(),
                        now.saturating_duration_since(watched.cancelled_at),
                        at.saturating_duration_since(watched.cancelled_at),
                    ));
                }
                Some(at) => next = Some(next.map_or(at, |next| next.min(at))),
                None => {}
            }
        }
        (spent, due, next)
    };
    drop(spent);
    for (id, name, reason, cause, since, after) in due {
        cancels::count_stubborn();
        report_stubborn(id, name.as_deref(), reason, cause.as_ref(), since, after);
    }
    if let Some(next) = next {
        sweep_at(next);
    }
}

/// Job `id`'s work returned after a cancel reached it: counted with the time since, and
/// unlisted. What is left (a stubborn job's report) is for the caller to make once its locks
/// are released.
#[must_use = "reports a stubborn job's return"]
pub(crate) fn returned(id: JobId) -> Option<Returned> {
    if cfg!(tethered_loom) {
        return None;
    }
    let watched = watch().jobs.remove(&id)?;
    let took = watched.cancelled_at.elapsed();
    cancels::count(Kind::ReturnedAfterCancel, watched.reason);
    cancels::record_return(watched.name.as_ref(), took);
    Some(Returned { id, watched, took })
}

/// A watched job that returned, from [`returned`]: what is left to report.
pub(crate) struct Returned {
    id: JobId,
    watched: Watched,
    took: Duration,
}

impl Returned {
    /// Reports the return of a job that was listed as stubborn (a `tracing` event).
    pub(crate) fn report(self) {
        let Returned { id, watched, took } = self;
        if watched.stubborn {
            report_returned(id, watched.name.as_deref(), watched.reason, took);
        }
    }
}

/// A job's work returned after a cancel that had not entered it in the watch yet: the cancel
/// reached running work, which returned at once.
pub(crate) fn returned_unwatched(name: Option<&Arc<str>>, reason: CancelReason) {
    if cfg!(tethered_loom) {
        return;
    }
    cancels::count(Kind::ReachedRunning, reason);
    cancels::count(Kind::ReturnedAfterCancel, reason);
    cancels::record_return(name, Duration::ZERO);
}

#[allow(unused_variables)]
fn report_stubborn(
    id: JobId,
    name: Option<&str>,
    reason: CancelReason,
    cause: Option<&Cause>,
    since: Duration,
    after: Duration,
) {
    #[cfg(feature = "tracing")]
    tracing::warn!(
        job.id = id.get(),
        job.name = name.unwrap_or(""),
        %reason,
        cause = cause.map(|cause| crate::__private::error_chain(cause.as_error())).unwrap_or_default(),
        since_cancel_ms = since.as_millis() as u64,
        "native job still running {since:?} after its cancel (stubborn past {after:?}): its code is not looking at its token"
    );
}

#[allow(unused_variables)]
fn report_returned(id: JobId, name: Option<&str>, reason: CancelReason, took: Duration) {
    #[cfg(feature = "tracing")]
    tracing::warn!(
        job.id = id.get(),
        job.name = name.unwrap_or(""),
        %reason,
        cancel_to_return_ms = took.as_millis() as u64,
        "stubborn native job returned {took:?} after its cancel"
    );
}
