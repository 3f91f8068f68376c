//! The core's figures through the [`metrics`](https://docs.rs/metrics) facade (the `metrics`
//! feature), named and labelled as Prometheus wants them; any `metrics` exporter serves them.
//!
//! Recorded as they happen (only when a cancel reaches running work: a job that is not
//! cancelled records nothing):
//!
//! | Name | Kind | Labels | What |
//! | --- | --- | --- | --- |
//! | `tethered_cancels_reached_running_total` | counter | `reason` | cancels that reached a job whose work ran |
//! | `tethered_jobs_returned_after_cancel_total` | counter | `reason` | jobs whose work returned after such a cancel |
//! | `tethered_jobs_abandoned_total` | counter | `reason` | jobs whose handle stopped waiting after their grace |
//! | `tethered_jobs_stubborn_total` | counter | | jobs listed as stubborn (still running [`stubborn_after`](crate::stubborn_after) past their cancel) |
//! | `tethered_cancel_to_return_seconds` | histogram | `job` | from the cancel reaching running work to its return, by job name (`""`: unnamed) |
//!
//! Read from [`stats()`](crate::stats) and [`stubborn_jobs()`](crate::stubborn_jobs) by
//! [`record_now`], which a scrape calls first:
//!
//! | Name | Kind | What |
//! | --- | --- | --- |
//! | `tethered_jobs_running` | gauge | closures (and external work) running now |
//! | `tethered_jobs_queued` | gauge | jobs waiting to start |
//! | `tethered_jobs_idle` | gauge | work idle between turns (a pool's workers) |
//! | `tethered_jobs_detached` | gauge | jobs running on with nobody waiting for them |
//! | `tethered_jobs_stubborn` | gauge | jobs stubborn right now, by `job` name (`""`: unnamed; names past the first [`CancelToReturn::NAMES`](crate::CancelToReturn::NAMES) as `"(other)"`); a name that has none left reads 0 |
//! | `tethered_jobs_spawned_total`, `tethered_jobs_cancelled_total`, `tethered_jobs_panicked_total` | counter | as [`NativeStats`](crate::NativeStats) counts them |
//!
//! `reason` is [`CancelReason::as_str`](crate::CancelReason::as_str): `requested`, `dropped`,
//! `timeout`, `shutdown`, `failed`.
//!
//! ```
//! // With a recorder installed (an exporter's), once at start:
//! tethered::metrics::describe();
//! // And in the scrape handler, before the exporter renders:
//! tethered::metrics::record_now();
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::time::Duration;

use crate::CancelToReturn;

use crate::contain::run_contained;
use crate::reason::CancelReason;

pub(crate) const REACHED_RUNNING: &str = "tethered_cancels_reached_running_total";
pub(crate) const RETURNED_AFTER_CANCEL: &str = "tethered_jobs_returned_after_cancel_total";
pub(crate) const ABANDONED: &str = "tethered_jobs_abandoned_total";
const STUBBORN_TOTAL: &str = "tethered_jobs_stubborn_total";
const CANCEL_TO_RETURN: &str = "tethered_cancel_to_return_seconds";
const RUNNING: &str = "tethered_jobs_running";
const QUEUED: &str = "tethered_jobs_queued";
const IDLE: &str = "tethered_jobs_idle";
const DETACHED: &str = "tethered_jobs_detached";
const STUBBORN: &str = "tethered_jobs_stubborn";
const SPAWNED: &str = "tethered_jobs_spawned_total";
const CANCELLED: &str = "tethered_jobs_cancelled_total";
const PANICKED: &str = "tethered_jobs_panicked_total";

/// Describes every metric above to the installed recorder (units and help texts, which a
/// Prometheus exporter prints as `# HELP`). Call it once, after installing the recorder.
pub fn describe() {
    use metrics::{Unit, describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        REACHED_RUNNING,
        Unit::Count,
        "Cancels that reached a native job whose work was running, by reason."
    );
    describe_counter!(
        RETURNED_AFTER_CANCEL,
        Unit::Count,
        "Native jobs whose work returned after a cancel reached it, by reason."
    );
    describe_counter!(
        ABANDONED,
        Unit::Count,
        "Native jobs whose handle stopped waiting after their grace, by reason."
    );
    describe_counter!(
        STUBBORN_TOTAL,
        Unit::Count,
        "Native jobs listed as stubborn: still running long after their cancel."
    );
    describe_histogram!(
        CANCEL_TO_RETURN,
        Unit::Seconds,
        "Time from a cancel reaching running native work to its return, by job name."
    );
    describe_gauge!(RUNNING, Unit::Count, "Native jobs running now.");
    describe_gauge!(QUEUED, Unit::Count, "Native jobs waiting to start.");
    describe_gauge!(IDLE, Unit::Count, "Native work idle between turns.");
    describe_gauge!(
        DETACHED,
        Unit::Count,
        "Native jobs running with nobody waiting."
    );
    describe_gauge!(STUBBORN, Unit::Count, "Native jobs stubborn right now.");
    describe_counter!(SPAWNED, Unit::Count, "Native jobs spawned.");
    describe_counter!(
        CANCELLED,
        Unit::Count,
        "Native jobs cancelled before they finished."
    );
    describe_counter!(PANICKED, Unit::Count, "Native job closures that panicked.");
}

/// Records the figures read rather than counted as they happen (the gauges and the job
/// counters of [`stats()`](crate::stats)): call it right before an exporter renders.
pub fn record_now() {
    let stats = crate::stats();
    let gauge = |name: &'static str, value: usize| metrics::gauge!(name).set(value as f64);
    gauge(RUNNING, stats.running);
    gauge(QUEUED, stats.queued);
    gauge(IDLE, stats.idle);
    gauge(DETACHED, stats.detached);
    stubborn_by_name();
    metrics::counter!(SPAWNED).absolute(stats.spawned);
    metrics::counter!(CANCELLED).absolute(stats.cancelled);
    metrics::counter!(PANICKED).absolute(stats.panicked);
}

/// Sets `tethered_jobs_stubborn{job=...}` for every name ever reported: how many jobs of that
/// name are stubborn now, 0 for a name with none left.
fn stubborn_by_name() {
    static REPORTED: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());
    let mut now: BTreeMap<String, usize> = BTreeMap::new();
    let mut reported = REPORTED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for job in crate::stubborn_jobs() {
        let name = job.name.unwrap_or_default();
        let name = if reported.contains(&name) || reported.len() < CancelToReturn::NAMES {
            name
        } else {
            "(other)".to_owned()
        };
        reported.insert(name.clone());
        *now.entry(name).or_default() += 1;
    }
    for name in reported.iter() {
        let count = now.get(name).copied().unwrap_or(0);
        run_contained(|| metrics::gauge!(STUBBORN, "job" => name.clone()).set(count as f64));
    }
}

// The recorder is user code, reached from a job's finish: a panic in it is contained there.

/// One event of the counter `name` (one of the `*_total` names above) with `reason`.
pub(crate) fn counted(name: &'static str, reason: CancelReason) {
    run_contained(|| metrics::counter!(name, "reason" => reason.as_str()).increment(1));
}

/// A job listed as stubborn.
pub(crate) fn stubborn_listed() {
    run_contained(|| metrics::counter!(STUBBORN_TOTAL).increment(1));
}

/// A job named `name` returned `took` after its cancel.
pub(crate) fn returned(name: &str, took: Duration) {
    run_contained(|| {
        metrics::histogram!(CANCEL_TO_RETURN, "job" => name.to_owned()).record(took.as_secs_f64());
    });
}
