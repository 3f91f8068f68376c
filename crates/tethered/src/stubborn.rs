//! Work that a cancel reached, watched until it returns: the stubborn jobs, which still run
//! [`stubborn_after()`] past their cancel, and what `cancels.rs` counts and times.
//!
//! A job enters the watch when a cancel reaches it while its work runs (its closure started, or
//! its external work is under way) and leaves it when the work returns. Its entry schedules
//! one deadline on the crate's timer; if the job still runs then, it is listed as stubborn
//! (with the `tracing` feature, a warning names it), and its return is reported again, with
//! how long it took. A job that is never cancelled while running never enters: the watch costs
//! nothing on a job's round trip.
//!
//! The watch is process-wide ([`PerProcess`]: a forked child starts its own), a map under a
//! lock, taken when a cancel reaches running work and when that work returns. Under
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
    /// Listed as stubborn (and reported so).
    stubborn: bool,
    /// The deadline at which it is listed, if it still runs.
    timer: Option<TimerEntry>,
}

static WATCH: PerProcess<Mutex<HashMap<JobId, Watched>>> =
    PerProcess::new(|| Mutex::new(HashMap::new()));

/// [`stubborn_after()`] in nanoseconds; `u64::MAX` for never.
static AFTER_NANOS: AtomicU64 = AtomicU64::new(DEFAULT_AFTER_NANOS);
const DEFAULT_AFTER_NANOS: u64 = 1_000_000_000;

fn watch() -> std::sync::MutexGuard<'static, HashMap<JobId, Watched>> {
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
    watch().insert(
        id,
        Watched {
            name,
            reason,
            cause,
            cancelled_at,
            stubborn: false,
            timer: None,
        },
    );
    let after = stubborn_after();
    let Some(deadline) = cancelled_at.checked_add(after) else {
        return;
    };
    // Scheduled once the job is in the watch, so a deadline that is due at once finds it. No
    // timer thread (the OS refused one): the job is still counted and timed, never listed.
    let Ok(entry) = timer::schedule(deadline, Box::new(move || listed(id, after))) else {
        return;
    };
    let unused = {
        let mut watch = watch();
        match watch.get_mut(&id) {
            Some(watched) if !watched.stubborn => {
                watched.timer = Some(entry);
                None
            }
            // Returned (or listed) meanwhile.
            _ => Some(entry),
        }
    };
    // Takes the timer's lock: not under the watch's.
    drop(unused);
}

/// The job's deadline passed: if it still runs, it is stubborn.
fn listed(id: JobId, after: Duration) {
    let report = {
        let mut watch = watch();
        let Some(watched) = watch.get_mut(&id) else {
            return;
        };
        if watched.stubborn {
            return;
        }
        watched.stubborn = true;
        // The timer ran it: the entry is spent.
        let spent = watched.timer.take();
        (
            spent,
            watched.name.clone(),
            watched.reason,
            watched.cause.clone(),
            watched.cancelled_at.elapsed(),
        )
    };
    let (spent, name, reason, cause, since) = report;
    drop(spent);
    cancels::count_stubborn();
    report_stubborn(id, name.as_deref(), reason, cause.as_ref(), since, after);
}

/// Job `id`'s work returned after a cancel reached it: counted with the time since, and
/// unlisted. What is left (a stubborn job's report, its timer entry) is for the caller to drop
/// once its locks are released.
#[must_use = "reports a stubborn job's return and releases its timer entry"]
pub(crate) fn returned(id: JobId) -> Option<Returned> {
    if cfg!(tethered_loom) {
        return None;
    }
    let watched = watch().remove(&id)?;
    let took = watched.cancelled_at.elapsed();
    cancels::count(Kind::ReturnedAfterCancel, watched.reason);
    cancels::record_return(watched.name.as_ref(), took);
    Some(Returned { id, watched, took })
}

/// A watched job that returned, from [`returned`].
pub(crate) struct Returned {
    id: JobId,
    watched: Watched,
    took: Duration,
}

impl Returned {
    /// Reports the return of a job that was listed as stubborn; drops its timer entry (the
    /// timer's lock) if it had not fired.
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
