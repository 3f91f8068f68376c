//! What cancels did to running work, process-wide: counts by reason, and the time from a
//! cancel to the work's return per job name, from [`cancel_stats()`].
//!
//! Recorded only when a cancel reaches work that has started (see `stubborn.rs`, which watches
//! such a job until it returns): a job that finishes uncancelled, or is cancelled before it
//! starts, records nothing here, so a round trip pays nothing for it.
//!
//! The counts are `std` atomics updated `Relaxed` (independent tallies, as in `stats.rs`); the
//! histograms are found by name in a map under a lock, taken once per cancelled job's return.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::per_process::PerProcess;
use crate::reason::CancelReason;

/// Counts by [`CancelReason`], from [`CancelStats`].
///
/// ```
/// use tethered::CancelReason;
///
/// let counts = tethered::cancel_stats().reached_running;
/// assert_eq!(counts.total(), counts.iter().map(|(_, n)| n).sum::<u64>());
/// assert_eq!(counts.get(CancelReason::Timeout), counts.timeout);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByReason {
    /// [`CancelReason::Requested`].
    pub requested: u64,
    /// [`CancelReason::Dropped`].
    pub dropped: u64,
    /// [`CancelReason::Timeout`].
    pub timeout: u64,
    /// [`CancelReason::Shutdown`].
    pub shutdown: u64,
    /// [`CancelReason::Failed`].
    pub failed: u64,
}

impl ByReason {
    /// The count of `reason`.
    pub fn get(&self, reason: CancelReason) -> u64 {
        match reason {
            CancelReason::Requested => self.requested,
            CancelReason::Dropped => self.dropped,
            CancelReason::Timeout => self.timeout,
            CancelReason::Shutdown => self.shutdown,
            CancelReason::Failed => self.failed,
        }
    }

    /// Every reason with its count, in [`CancelReason::ALL`]'s order.
    pub fn iter(&self) -> impl Iterator<Item = (CancelReason, u64)> + '_ {
        CancelReason::ALL
            .iter()
            .map(move |&reason| (reason, self.get(reason)))
    }

    /// The sum over the reasons.
    pub fn total(&self) -> u64 {
        self.iter().map(|(_, count)| count).sum()
    }
}

/// What cancels did to running work in this process, from [`cancel_stats()`]: how often a
/// cancel reached work that had started, how often such work returned afterwards and how long
/// it took, and how often a handle gave up waiting ([`JobOptions::grace`](crate::JobOptions::grace)).
/// Work cancelled and not returned is [`stubborn_jobs()`](crate::stubborn_jobs) once it has run
/// past [`stubborn_after()`](crate::stubborn_after).
///
/// ```
/// use std::time::Duration;
/// use tethered::{CancelReason, JobOptions, Tethered};
///
/// let (started, running) = std::sync::mpsc::channel();
/// let job = tethered::spawn(JobOptions::new().name("render"), move |token| {
///     started.send(()).unwrap();
///     token.wait(); // honours its cancel
/// })?;
/// running.recv().unwrap(); // the closure is running
/// assert!(job.cancel(CancelReason::Timeout));
/// let _ = job.join_blocking();
/// let stats = tethered::cancel_stats();
/// assert!(stats.reached_running.timeout >= 1);
/// let render = stats.cancel_to_return("render").expect("recorded by name");
/// assert!(render.count >= 1 && render.max < Duration::from_secs(5));
/// # Ok::<(), tethered::SpawnError>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CancelStats {
    /// Cancels that reached a job whose work had started and not returned: its closure ran, or
    /// its external work was under way. One per job, with the reason its token read.
    pub reached_running: ByReason,
    /// Jobs whose work returned after a cancel had reached it, by that reason.
    pub returned_after_cancel: ByReason,
    /// Jobs whose handle stopped waiting: cancelled and still running after their
    /// [grace](crate::JobOptions::grace) (`NativeError::Abandoned`), by reason.
    pub abandoned: ByReason,
    /// Jobs ever listed among the stubborn ones (cancelled and still running past
    /// [`stubborn_after()`](crate::stubborn_after)).
    pub stubborn: u64,
    /// The time from a cancel reaching running work to its return, one histogram per job name
    /// (`""` for unnamed jobs), sorted by name.
    pub by_name: Vec<CancelToReturn>,
}

impl CancelStats {
    /// The histogram of the jobs named `name` (`""`: unnamed), if any returned after a cancel.
    pub fn cancel_to_return(&self, name: &str) -> Option<&CancelToReturn> {
        self.by_name.iter().find(|entry| entry.name == name)
    }
}

/// The time from a cancel reaching running work to its return, for the jobs of one name: a
/// histogram with fixed bounds ([`CancelToReturn::BOUNDS`]), as Prometheus keeps one.
///
/// ```
/// use std::time::Duration;
/// use tethered::CancelToReturn;
///
/// // The bounds go from 10 µs to a minute; a return slower than that counts past the last.
/// assert_eq!(CancelToReturn::BOUNDS[0], Duration::from_micros(10));
/// assert_eq!(*CancelToReturn::BOUNDS.last().unwrap(), Duration::from_secs(60));
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CancelToReturn {
    /// The jobs' name ([`JobOptions::name`](crate::JobOptions::name)); `""` for unnamed ones,
    /// and `"(other)"` for names past the first [`CancelToReturn::NAMES`].
    pub name: String,
    /// Returns recorded.
    pub count: u64,
    /// Their times added up.
    pub sum: Duration,
    /// The slowest.
    pub max: Duration,
    /// `buckets[i]`: how many took at most [`BOUNDS[i]`](Self::BOUNDS) (and more than the
    /// bound before); the last entry, one past the bounds, counts the slower ones.
    pub buckets: Vec<u64>,
}

impl CancelToReturn {
    /// The buckets' upper bounds: 1, 2 and 5 times each power of ten from 10 µs to 10 s, then
    /// 30 s and 60 s.
    pub const BOUNDS: [Duration; 20] = [
        Duration::from_micros(10),
        Duration::from_micros(20),
        Duration::from_micros(50),
        Duration::from_micros(100),
        Duration::from_micros(200),
        Duration::from_micros(500),
        Duration::from_millis(1),
        Duration::from_millis(2),
        Duration::from_millis(5),
        Duration::from_millis(10),
        Duration::from_millis(20),
        Duration::from_millis(50),
        Duration::from_millis(100),
        Duration::from_millis(200),
        Duration::from_millis(500),
        Duration::from_secs(1),
        Duration::from_secs(2),
        Duration::from_secs(5),
        Duration::from_secs(30),
        Duration::from_secs(60),
    ];

    /// How many names get a histogram of their own; later names share `"(other)"`, so that
    /// names made per request cannot grow the process without bound.
    pub const NAMES: usize = 256;

    /// An upper estimate of the `q` quantile (0 to 1): the bound of the bucket it falls in
    /// ([`max`](Self::max) past the last bound). `None` with nothing recorded.
    ///
    /// ```
    /// let none = tethered::CancelToReturn::default();
    /// assert_eq!(none.quantile(0.5), None);
    /// ```
    pub fn quantile(&self, q: f64) -> Option<std::time::Duration> {
        if self.count == 0 {
            return None;
        }
        let wanted = (q.clamp(0.0, 1.0) * self.count as f64).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (index, count) in self.buckets.iter().enumerate() {
            seen += count;
            if seen >= wanted {
                return Some(
                    Self::BOUNDS
                        .get(index)
                        .copied()
                        .unwrap_or(self.max)
                        .min(self.max),
                );
            }
        }
        Some(self.max)
    }
}

/// The process's counts and histograms.
struct Recorder {
    /// `[kind][reason]`: the three [`ByReason`] counts of [`CancelStats`].
    counts: [[AtomicU64; 5]; 3],
    stubborn: AtomicU64,
    by_name: Mutex<HashMap<Arc<str>, Arc<Histogram>>>,
}

/// One name's histogram.
struct Histogram {
    buckets: [AtomicU64; CancelToReturn::BOUNDS.len() + 1],
    count: AtomicU64,
    sum_nanos: AtomicU64,
    max_nanos: AtomicU64,
}

impl Histogram {
    fn new() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            count: AtomicU64::new(0),
            sum_nanos: AtomicU64::new(0),
            max_nanos: AtomicU64::new(0),
        }
    }

    fn record(&self, took: Duration) {
        let index = CancelToReturn::BOUNDS.partition_point(|&bound| bound < took);
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        // ORDERING (all): Relaxed, independent tallies (see the module docs).
        self.buckets[index].fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
        self.max_nanos.fetch_max(nanos, Ordering::Relaxed);
    }

    fn snapshot(&self, name: &str) -> CancelToReturn {
        CancelToReturn {
            name: name.to_owned(),
            count: self.count.load(Ordering::Relaxed),
            sum: Duration::from_nanos(self.sum_nanos.load(Ordering::Relaxed)),
            max: Duration::from_nanos(self.max_nanos.load(Ordering::Relaxed)),
            buckets: self
                .buckets
                .iter()
                .map(|bucket| bucket.load(Ordering::Relaxed))
                .collect(),
        }
    }
}

static RECORDER: PerProcess<Recorder> = PerProcess::new(|| Recorder {
    counts: std::array::from_fn(|_| std::array::from_fn(|_| AtomicU64::new(0))),
    stubborn: AtomicU64::new(0),
    by_name: Mutex::new(HashMap::new()),
});

/// Which of the three counts of [`CancelStats`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kind {
    ReachedRunning = 0,
    ReturnedAfterCancel = 1,
    Abandoned = 2,
}

fn index(reason: CancelReason) -> usize {
    match reason {
        CancelReason::Requested => 0,
        CancelReason::Dropped => 1,
        CancelReason::Timeout => 2,
        CancelReason::Shutdown => 3,
        CancelReason::Failed => 4,
    }
}

/// Counts one event of `kind` with `reason`.
pub(crate) fn count(kind: Kind, reason: CancelReason) {
    RECORDER.get().counts[kind as usize][index(reason)].fetch_add(1, Ordering::Relaxed);
    #[cfg(feature = "metrics")]
    crate::metrics::counted(
        match kind {
            Kind::ReachedRunning => crate::metrics::REACHED_RUNNING,
            Kind::ReturnedAfterCancel => crate::metrics::RETURNED_AFTER_CANCEL,
            Kind::Abandoned => crate::metrics::ABANDONED,
        },
        reason,
    );
}

/// Counts a job listed among the stubborn ones.
pub(crate) fn count_stubborn() {
    RECORDER.get().stubborn.fetch_add(1, Ordering::Relaxed);
    #[cfg(feature = "metrics")]
    crate::metrics::stubborn_listed();
}

/// Records that a job named `name` returned `took` after its cancel reached it.
pub(crate) fn record_return(name: Option<&Arc<str>>, took: Duration) {
    let recorder = RECORDER.get();
    let (key, histogram) = {
        let mut by_name = recorder
            .by_name
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let wanted = match name {
            None => "",
            Some(name)
                if by_name.contains_key(&**name) || by_name.len() < CancelToReturn::NAMES =>
            {
                name
            }
            Some(_) => "(other)",
        };
        // A name seen before costs a lookup, no allocation.
        match by_name.get_key_value(wanted) {
            Some((key, histogram)) => (key.clone(), histogram.clone()),
            None => {
                let key: Arc<str> = match name {
                    Some(name) if **name == *wanted => name.clone(),
                    _ => Arc::from(wanted),
                };
                let histogram = Arc::new(Histogram::new());
                by_name.insert(key.clone(), histogram.clone());
                (key, histogram)
            }
        }
    };
    histogram.record(took);
    #[cfg(feature = "metrics")]
    crate::metrics::returned(&key, took);
    #[cfg(not(feature = "metrics"))]
    let _ = key;
}

/// What cancels did to running work in this process so far (see [`CancelStats`]).
///
/// ```
/// let stats = tethered::cancel_stats();
/// assert!(stats.returned_after_cancel.total() <= stats.reached_running.total());
/// ```
pub fn cancel_stats() -> CancelStats {
    let recorder = RECORDER.get();
    let by_reason = |kind: Kind| {
        let counts = &recorder.counts[kind as usize];
        let at = |reason| counts[index(reason)].load(Ordering::Relaxed);
        ByReason {
            requested: at(CancelReason::Requested),
            dropped: at(CancelReason::Dropped),
            timeout: at(CancelReason::Timeout),
            shutdown: at(CancelReason::Shutdown),
            failed: at(CancelReason::Failed),
        }
    };
    let histograms: Vec<(Arc<str>, Arc<Histogram>)> = recorder
        .by_name
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .iter()
        .map(|(name, histogram)| (name.clone(), histogram.clone()))
        .collect();
    let mut by_name: Vec<CancelToReturn> = histograms
        .iter()
        .map(|(name, histogram)| histogram.snapshot(name))
        .collect();
    by_name.sort_by(|a, b| a.name.cmp(&b.name));
    CancelStats {
        reached_running: by_reason(Kind::ReachedRunning),
        returned_after_cancel: by_reason(Kind::ReturnedAfterCancel),
        abandoned: by_reason(Kind::Abandoned),
        stubborn: recorder.stubborn.load(Ordering::Relaxed),
        by_name,
    }
}
