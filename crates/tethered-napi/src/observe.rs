//! Which native code ignores its cancel, read from JavaScript: [`cancel_stats`],
//! [`stubborn_jobs`] and [`set_stubborn_after`], which an addon exports with `#[napi]` as
//! they are. Each addon links its own copy of `tethered`, so each reports its own jobs.
//!
//! JavaScript's shape: plain objects with camelCase keys, times in milliseconds, reasons named
//! as the `CancelReason` type of [`TYPESCRIPT`](crate::TYPESCRIPT) names them (`'Dropped'`).

use std::time::Duration;

use napi::bindgen_prelude::Object;
use napi::{Env, Error, Status};
use tethered::{ByReason, CancelToReturn};

use crate::errors::reason_name;

/// `cancelStats()`: what cancels did to the addon's running native work so far
/// ([`tethered::cancel_stats`]), as a `CancelStats` (declared in
/// [`TYPESCRIPT`](crate::TYPESCRIPT)):
///
/// ```js
/// {
///   reachedRunning: { Requested: 0, Dropped: 3, Timeout: 1, Shutdown: 0, Failed: 0 },
///   returnedAfterCancel: { ... },   // the same keys
///   abandoned: { ... },             // the same keys
///   stubborn: 1,                    // jobs ever listed by stubbornJobs()
///   cancelToReturn: {               // by job name ('' for unnamed jobs); no prototype
///     render: {
///       count: 4, sumMs: 3.1, maxMs: 1.2,
///       p50Ms: 1, p99Ms: 2,         // upper estimates; null with nothing recorded
///       buckets: [{ leMs: 0.01, count: 0 }, ..., { leMs: Infinity, count: 0 }],
///     },
///   },
/// }
/// ```
///
/// Each bucket counts the returns slower than the bound before it, up to its own `leMs`.
///
/// ```no_run
/// use napi::bindgen_prelude::Object;
/// use napi::Env;
///
/// // In an addon, with `#[napi(ts_return_type = "CancelStats")]` on it:
/// pub fn cancel_stats(env: &Env) -> napi::Result<Object<'_>> {
///     tethered_napi::cancel_stats(env)
/// }
/// ```
///
/// # Errors
///
/// Only what napi returns when a value cannot be made (the environment is closing).
pub fn cancel_stats(env: &Env) -> napi::Result<Object<'_>> {
    let stats = tethered::cancel_stats();
    let mut object = Object::new(env)?;
    object.set("reachedRunning", by_reason(env, &stats.reached_running)?)?;
    object.set(
        "returnedAfterCancel",
        by_reason(env, &stats.returned_after_cancel)?,
    )?;
    object.set("abandoned", by_reason(env, &stats.abandoned)?)?;
    object.set("stubborn", stats.stubborn as f64)?;
    // Without a prototype, so that every name is an own key: `__proto__` too (a job's name
    // may come from a request).
    let mut by_name: Object<'_> = env.run_script("Object.create(null)")?;
    for histogram in &stats.by_name {
        by_name.set(&histogram.name, cancel_to_return(env, histogram)?)?;
    }
    object.set("cancelToReturn", by_name)?;
    Ok(object)
}

/// `stubbornJobs()`: the addon's jobs cancelled and still running past the threshold
/// ([`tethered::stubborn_jobs`]), the longest cancelled first, each a `StubbornJob`:
///
/// ```js
/// { id: 17, name: 'legacy-scan', reason: 'Timeout', cause: 'deadline 2 s', sinceCancelMs: 4200.5 }
/// // name and cause may be null
/// ```
///
/// ```no_run
/// use napi::bindgen_prelude::Object;
/// use napi::Env;
///
/// // In an addon, with `#[napi(ts_return_type = "StubbornJob[]")]` on it:
/// pub fn stubborn_jobs(env: &Env) -> napi::Result<Vec<Object<'_>>> {
///     tethered_napi::stubborn_jobs(env)
/// }
/// ```
///
/// # Errors
///
/// Only what napi returns when a value cannot be made (the environment is closing).
pub fn stubborn_jobs(env: &Env) -> napi::Result<Vec<Object<'_>>> {
    tethered::stubborn_jobs()
        .into_iter()
        .map(|job| {
            let mut object = Object::new(env)?;
            object.set("id", job.id.get() as f64)?;
            object.set("name", job.name)?;
            object.set("reason", reason_name(job.reason))?;
            object.set("cause", job.cause.map(|cause| cause.to_string()))?;
            object.set("sinceCancelMs", millis(job.since_cancel))?;
            Ok(object)
        })
        .collect()
}

/// `setStubbornAfter(ms)`: how long a job may run on after its cancel before `stubbornJobs()`
/// lists it ([`tethered::set_stubborn_after`]; 1,000 ms unless set). `0` lists a job at once,
/// `Infinity` never; a negative number or `NaN` throws a `RangeError` with
/// `code: 'ERR_OUT_OF_RANGE'`, as Node's own APIs do.
///
/// ```no_run
/// use napi::Env;
///
/// // In an addon, with `#[napi]` on it:
/// pub fn set_stubborn_after(env: &Env, ms: f64) -> napi::Result<()> {
///     tethered_napi::set_stubborn_after(env, ms)
/// }
/// ```
///
/// # Errors
///
/// The `RangeError` above, thrown into JavaScript (a napi `PendingException`).
pub fn set_stubborn_after(env: &Env, ms: f64) -> napi::Result<()> {
    if ms.is_nan() || ms < 0.0 {
        let message =
            format!("setStubbornAfter takes a number of milliseconds from 0 to Infinity, not {ms}");
        env.throw_range_error(&message, Some("ERR_OUT_OF_RANGE"))?;
        return Err(Error::new(Status::PendingException, message));
    }
    let after = Duration::try_from_secs_f64(ms / 1_000.0).unwrap_or(Duration::MAX);
    tethered::set_stubborn_after(after);
    Ok(())
}

fn millis(time: Duration) -> f64 {
    time.as_secs_f64() * 1_000.0
}

fn by_reason<'env>(env: &'env Env, counts: &ByReason) -> napi::Result<Object<'env>> {
    let mut object = Object::new(env)?;
    for (reason, count) in counts.iter() {
        object.set(reason_name(reason), count as f64)?;
    }
    Ok(object)
}

fn cancel_to_return<'env>(
    env: &'env Env,
    histogram: &CancelToReturn,
) -> napi::Result<Object<'env>> {
    let mut object = Object::new(env)?;
    object.set("count", histogram.count as f64)?;
    object.set("sumMs", millis(histogram.sum))?;
    object.set("maxMs", millis(histogram.max))?;
    object.set("p50Ms", histogram.quantile(0.5).map(millis))?;
    object.set("p99Ms", histogram.quantile(0.99).map(millis))?;
    let bounds = CancelToReturn::BOUNDS
        .iter()
        .map(|&bound| millis(bound))
        .chain([f64::INFINITY]);
    let buckets = bounds
        .zip(histogram.buckets.iter().copied())
        .map(|(le_ms, count)| {
            let mut bucket = Object::new(env)?;
            bucket.set("leMs", le_ms)?;
            bucket.set("count", count as f64)?;
            Ok(bucket)
        })
        .collect::<napi::Result<Vec<_>>>()?;
    object.set("buckets", buckets)?;
    Ok(object)
}
