//! The addon's JavaScript surface. `#[napi]` expands to the `unsafe` FFI glue of each item,
//! so this module (and only this one) allows `unsafe_code`; the one hand-written `unsafe fn`
//! is the `ToNapiValue` of [`PanickyValue`], a trait method napi declares `unsafe`, whose body
//! does nothing unsafe.
//!
//! Every function that runs a native job takes the caller's `{ signal }` last, as
//! `Option<CallOptions>`; the napi-rs `AsyncTask` versions they are compared with
//! (`naiveSpin`, `addAsyncTask`) take a bare `AbortSignal`, as napi-rs does.
#![allow(unsafe_code)]

use std::num::NonZeroUsize;
use std::sync::LazyLock;
use std::time::Duration;

use napi::bindgen_prelude::{AbortSignal, AsyncTask, Object, PromiseRaw, ToNapiValue, TypeName};
use napi::{Env, Error, Status, Task, ValueType, sys};
use napi_derive::napi;
use tethered_napi::tethered::Cause;
use tethered_napi::{CallOptions, CancelReason, JobOptions, NativeScope, ThreadSpawner};

use crate::work;

fn ms(max_ms: u32) -> Duration {
    Duration::from_millis(u64::from(max_ms))
}

/// `spin(maxMs, { signal })`: busy until the signal aborts it or `maxMs` passed; the steps
/// taken. Runs on the addon's pool.
#[napi(ts_return_type = "Promise<number>")]
pub fn spin<'env>(
    env: &'env Env,
    max_ms: u32,
    options: Option<CallOptions<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    tethered_napi::spawn_native(env, options, move |token| work::spin(&token, ms(max_ms)))
}

/// `spinThread(maxMs, { signal })`: `spin` on a thread of its own rather than the pool (what
/// every job did before the pool: the measurements compare the two).
#[napi(ts_return_type = "Promise<number>")]
pub fn spin_thread<'env>(
    env: &'env Env,
    max_ms: u32,
    options: Option<CallOptions<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    let job = JobOptions::new().on(ThreadSpawner::new().name("spin"));
    tethered_napi::spawn_native_with(env, options, job, move |token| {
        work::spin(&token, ms(max_ms))
    })
}

/// `spinJoined(maxMs, { signal })`: `spin` whose promise settles only once the loop returned
/// (a grace without end); a rejection's `returned` is the steps taken.
#[napi(ts_return_type = "Promise<number>")]
pub fn spin_joined<'env>(
    env: &'env Env,
    max_ms: u32,
    options: Option<CallOptions<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    let job = JobOptions::new().grace(Duration::MAX);
    tethered_napi::spawn_native_with(env, options, job, move |token| {
        work::spin(&token, ms(max_ms))
    })
}

/// `spinFor(maxMs, timeoutMs, { signal })`: `spin` with a deadline of its own.
#[napi(ts_return_type = "Promise<number>")]
pub fn spin_for<'env>(
    env: &'env Env,
    max_ms: u32,
    timeout_ms: u32,
    options: Option<CallOptions<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    let job = JobOptions::new().timeout(ms(timeout_ms));
    tethered_napi::spawn_native_with(env, options, job, move |token| {
        work::spin(&token, ms(max_ms))
    })
}

/// `pulse(maxMs, { signal })`: busy 1 ms in every 10 until aborted or `maxMs` passed. Light,
/// and meant to run by the hundred at once: each on a thread of its own.
#[napi(ts_return_type = "Promise<number>")]
pub fn pulse<'env>(
    env: &'env Env,
    max_ms: u32,
    options: Option<CallOptions<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    let job = JobOptions::new().on(ThreadSpawner::new().name("pulse"));
    tethered_napi::spawn_native_with(env, options, job, move |token| {
        work::pulse(&token, ms(max_ms))
    })
}

/// `stubborn(ms, graceMs, { signal })`: sleeps `ms` whatever the signal says, on a thread of
/// its own (blocking work stays off the pool); once cancelled, its promise waits `graceMs` at
/// most for it (0: not at all).
#[napi(ts_return_type = "Promise<number>")]
pub fn stubborn<'env>(
    env: &'env Env,
    sleep_ms: u32,
    grace_ms: u32,
    options: Option<CallOptions<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    let job = JobOptions::new()
        .grace(ms(grace_ms))
        .on(ThreadSpawner::new().name("stubborn"));
    tethered_napi::spawn_native_with(env, options, job, move |_token| {
        work::stubborn(ms(sleep_ms))
    })
}

/// `named(name, ms, honour, { signal })`: `ms` milliseconds of work in a job named `name`, on a
/// thread of its own; it stops at an abort only if `honour`, and otherwise runs on as native
/// code without a check would.
#[napi(ts_return_type = "Promise<void>")]
pub fn named<'env>(
    env: &'env Env,
    name: String,
    max_ms: u32,
    honour: bool,
    options: Option<CallOptions<'env>>,
) -> napi::Result<PromiseRaw<'env, ()>> {
    let job = JobOptions::new()
        .name(name)
        .on(ThreadSpawner::new().name("named"));
    tethered_napi::spawn_native_with(env, options, job, move |token| {
        let until = std::time::Instant::now() + ms(max_ms);
        while std::time::Instant::now() < until && !(honour && token.is_cancelled()) {
            std::thread::sleep(Duration::from_millis(1));
        }
    })
}

/// `cancelStats()`: what cancels did to the addon's running native work.
#[napi(ts_return_type = "CancelStats")]
pub fn cancel_stats(env: &Env) -> napi::Result<Object<'_>> {
    tethered_napi::cancel_stats(env)
}

/// `stubbornJobs()`: the addon's jobs still running long after their cancel.
#[napi(ts_return_type = "StubbornJob[]")]
pub fn stubborn_jobs(env: &Env) -> napi::Result<Vec<Object<'_>>> {
    tethered_napi::stubborn_jobs(env)
}

/// `setStubbornAfter(ms)`: how long after its cancel a running job counts as stubborn.
#[napi]
pub fn set_stubborn_after(env: &Env, ms: f64) -> napi::Result<()> {
    tethered_napi::set_stubborn_after(env, ms)
}

/// `add(a, b, { signal })`: `a + b`, computed on a native thread.
#[napi(ts_return_type = "Promise<number>")]
pub fn add<'env>(
    env: &'env Env,
    a: i32,
    b: i32,
    options: Option<CallOptions<'env>>,
) -> napi::Result<PromiseRaw<'env, i32>> {
    tethered_napi::spawn_native(env, options, move |_token| a.wrapping_add(b))
}

/// `fail(message, { signal })`: rejects with an `Error` carrying `message`.
#[napi(ts_return_type = "Promise<number>")]
pub fn fail<'env>(
    env: &'env Env,
    message: String,
    options: Option<CallOptions<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    tethered_napi::spawn_native(env, options, move |_token| -> napi::Result<u32> {
        Err(Error::new(Status::InvalidArg, message))
    })
}

/// `panics(message, { signal })`: the closure panics with `message`.
#[napi(ts_return_type = "Promise<number>")]
pub fn panics<'env>(
    env: &'env Env,
    message: String,
    options: Option<CallOptions<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    tethered_napi::spawn_native(env, options, move |_token| -> u32 { panic!("{message}") })
}

/// A value whose conversion to JavaScript panics.
#[derive(Debug)]
pub struct PanickyValue;

impl TypeName for PanickyValue {
    fn type_name() -> &'static str {
        "PanickyValue"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for PanickyValue {
    unsafe fn to_napi_value(_env: sys::napi_env, _val: Self) -> napi::Result<sys::napi_value> {
        panic!("this value cannot become JavaScript")
    }
}

/// `panickyValue({ signal })`: the closure returns a value whose conversion panics.
#[napi(ts_return_type = "Promise<never>")]
pub fn panicky_value<'env>(
    env: &'env Env,
    options: Option<CallOptions<'env>>,
) -> napi::Result<PromiseRaw<'env, PanickyValue>> {
    tethered_napi::spawn_native(env, options, move |_token| PanickyValue)
}

/// At most two `scoped` jobs run at once; `cancelScoped()` cancels them all.
static SCOPE: LazyLock<NativeScope> =
    LazyLock::new(|| NativeScope::new().with_max_running(NonZeroUsize::MIN.saturating_add(1)));

/// `scoped(maxMs, { signal })`: `spin` in the addon's scope.
#[napi(ts_return_type = "Promise<number>")]
pub fn scoped<'env>(
    env: &'env Env,
    max_ms: u32,
    options: Option<CallOptions<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    let job = JobOptions::new().name("scoped-spin").in_scope(&SCOPE);
    tethered_napi::spawn_native_with(env, options, job, move |token| {
        work::spin(&token, ms(max_ms))
    })
}

/// `scopedJoined(maxMs, { signal })`: `spinJoined` in the addon's scope.
#[napi(ts_return_type = "Promise<number>")]
pub fn scoped_joined<'env>(
    env: &'env Env,
    max_ms: u32,
    options: Option<CallOptions<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    let job = JobOptions::new().grace(Duration::MAX).in_scope(&SCOPE);
    tethered_napi::spawn_native_with(env, options, job, move |token| {
        work::spin(&token, ms(max_ms))
    })
}

/// `cancelScoped(timeout)`: cancels every job of the scope, with `Timeout`, or with
/// `Requested` and the cause "the scope was cancelled".
#[napi]
pub fn cancel_scoped(timeout: bool) {
    if timeout {
        SCOPE.cancel_all(CancelReason::Timeout);
    } else {
        SCOPE.cancel_all_with_cause(
            CancelReason::Requested,
            Cause::msg("the scope was cancelled"),
        );
    }
}

/// `cancelScopedFromThread(afterMs)`: cancels every job of the scope from a thread of its
/// own, `afterMs` from now, with `Requested` and the cause "cancelled from another thread".
#[napi]
pub fn cancel_scoped_from_thread(after_ms: u32) {
    std::thread::spawn(move || {
        std::thread::sleep(ms(after_ms));
        SCOPE.cancel_all_with_cause(
            CancelReason::Requested,
            Cause::msg("cancelled from another thread"),
        );
    });
}

/// tethered's counters for this addon's jobs.
#[napi(object)]
#[derive(Debug)]
pub struct Stats {
    /// Closures running now.
    pub running: u32,
    /// Jobs waiting for a place (the pool's or a scope's).
    pub queued: u32,
    /// Jobs whose caller stopped waiting while their closure still runs.
    pub detached: u32,
    /// Closures that panicked, in all.
    pub panicked: u32,
}

/// `stats()`: tethered's counters.
#[napi]
pub fn stats() -> Stats {
    let stats = tethered_napi::stats();
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Stats {
        running: count(stats.running),
        queued: count(stats.queued),
        detached: count(stats.detached),
        panicked: u32::try_from(stats.panicked).unwrap_or(u32::MAX),
    }
}

/// `poolSize()`: how many threads the addon's default pool runs at most.
#[napi]
pub fn pool_size() -> u32 {
    u32::try_from(tethered_napi::pool_size()).unwrap_or(u32::MAX)
}

/// `live()`: how many of the addon's tethered closures run now.
#[napi]
pub fn live() -> u32 {
    u32::try_from(work::LIVE.load(std::sync::atomic::Ordering::SeqCst)).unwrap_or(u32::MAX)
}

/// `startedCancelled()`: how many closures began with their token cancelled already.
#[napi]
pub fn started_cancelled() -> u32 {
    u32::try_from(work::STARTED_CANCELLED.load(std::sync::atomic::Ordering::SeqCst))
        .unwrap_or(u32::MAX)
}

/// `naiveLive()`: how many naive `AsyncTask` loops run now.
#[napi]
pub fn naive_live() -> u32 {
    u32::try_from(work::NAIVE_LIVE.load(std::sync::atomic::Ordering::SeqCst)).unwrap_or(u32::MAX)
}

/// `stopNaive()`: ends every naive loop running now (the suite's clean-up).
#[napi]
pub fn stop_naive() {
    // ORDERING: Relaxed: see `work::naive_spin`.
    work::NAIVE_GENERATION.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// A cancelled closure's record.
#[napi(object)]
#[derive(Debug)]
pub struct Stop {
    /// Its token's reason, and its cause if any: `"Dropped: the client went away"`.
    pub reason: String,
    /// When it returned, on `nowNs()`'s clock.
    pub at_ns: f64,
}

/// `takeStops()`: what the cancelled closures saw since the last call.
#[napi]
pub fn take_stops() -> Vec<Stop> {
    work::take_stops()
        .into_iter()
        .map(|(reason, at_ns)| Stop { reason, at_ns })
        .collect()
}

/// `nowNs()`: the clock of `takeStops()`, in nanoseconds.
#[napi]
pub fn now_ns() -> f64 {
    work::now_ns()
}

/// The naive version: napi-rs's `AsyncTask` on libuv's pool.
#[derive(Debug)]
pub struct NaiveSpin {
    max: Duration,
    generation: u64,
}

impl Task for NaiveSpin {
    type Output = u32;
    type JsValue = u32;

    fn compute(&mut self) -> napi::Result<u32> {
        Ok(work::naive_spin(self.max, self.generation))
    }

    fn resolve(&mut self, _env: Env, steps: u32) -> napi::Result<u32> {
        Ok(steps)
    }
}

/// `naiveSpin(maxMs, signal?)`: `AsyncTask::with_optional_signal`, as napi-rs documents it:
/// an abort cancels the task only if it has not started.
#[napi]
pub fn naive_spin(max_ms: u32, signal: Option<AbortSignal>) -> AsyncTask<NaiveSpin> {
    AsyncTask::with_optional_signal(
        NaiveSpin {
            max: ms(max_ms),
            // ORDERING: Relaxed: see `work::naive_spin`.
            generation: work::NAIVE_GENERATION.load(std::sync::atomic::Ordering::Relaxed),
        },
        signal,
    )
}

/// `add` as napi-rs's `AsyncTask`: `a + b` in `compute`, on libuv's pool.
#[derive(Debug)]
pub struct AddTask {
    a: i32,
    b: i32,
}

impl Task for AddTask {
    type Output = i32;
    type JsValue = i32;

    fn compute(&mut self) -> napi::Result<i32> {
        Ok(self.a.wrapping_add(self.b))
    }

    fn resolve(&mut self, _env: Env, sum: i32) -> napi::Result<i32> {
        Ok(sum)
    }
}

/// `addAsyncTask(a, b, signal?)`: `add`'s twin as `AsyncTask::with_optional_signal`, what a
/// user of napi-rs alone writes; `crates/tethered-napi/tests/js/peers.mjs` times `add`
/// against it.
#[napi(ts_return_type = "Promise<number>")]
pub fn add_async_task(a: i32, b: i32, signal: Option<AbortSignal>) -> AsyncTask<AddTask> {
    AsyncTask::with_optional_signal(AddTask { a, b }, signal)
}
