//! The addon's JavaScript surface. `#[napi]` expands to the `unsafe` FFI glue of each item,
//! so this module (and only this one) allows `unsafe_code`; the one hand-written `unsafe fn`
//! is the `ToNapiValue` of [`PanickyValue`], a trait method napi declares `unsafe`, whose body
//! does nothing unsafe.
#![allow(unsafe_code)]

use std::sync::LazyLock;
use std::time::Duration;

use napi::bindgen_prelude::{AbortSignal, AsyncTask, Object, PromiseRaw, ToNapiValue, TypeName};
use napi::{Env, Error, Status, Task, ValueType, sys};
use napi_derive::napi;
use tethered::{CancelReason, NativeScope};

use crate::work;

fn ms(max_ms: u32) -> Duration {
    Duration::from_millis(u64::from(max_ms))
}

/// `spin(maxMs, signal?)`: busy until the signal aborts it or `maxMs` passed; the steps taken.
#[napi(ts_return_type = "Promise<number>")]
pub fn spin<'env>(
    env: &'env Env,
    max_ms: u32,
    signal: Option<Object<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    tethered_napi::spawn_native(env, signal, move |token| work::spin(&token, ms(max_ms)))
}

/// `spinJoined(maxMs, signal?)`: `spin` whose promise settles only once the loop returned.
#[napi(ts_return_type = "Promise<number>")]
pub fn spin_joined<'env>(
    env: &'env Env,
    max_ms: u32,
    signal: Option<Object<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    tethered_napi::spawn_native_joined(env, signal, move |token| work::spin(&token, ms(max_ms)))
}

/// `pulse(maxMs, signal?)`: busy 1 ms in every 10 until aborted or `maxMs` passed.
#[napi(ts_return_type = "Promise<number>")]
pub fn pulse<'env>(
    env: &'env Env,
    max_ms: u32,
    signal: Option<Object<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    tethered_napi::spawn_native(env, signal, move |token| work::pulse(&token, ms(max_ms)))
}

/// `stubborn(ms, signal?)`: sleeps `ms` whatever the signal says.
#[napi(ts_return_type = "Promise<number>")]
pub fn stubborn<'env>(
    env: &'env Env,
    sleep_ms: u32,
    signal: Option<Object<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    tethered_napi::spawn_native(env, signal, move |_token| work::stubborn(ms(sleep_ms)))
}

/// `add(a, b, signal?)`: `a + b`, computed on a native thread.
#[napi(ts_return_type = "Promise<number>")]
pub fn add<'env>(
    env: &'env Env,
    a: i32,
    b: i32,
    signal: Option<Object<'env>>,
) -> napi::Result<PromiseRaw<'env, i32>> {
    tethered_napi::spawn_native(env, signal, move |_token| a.wrapping_add(b))
}

/// `fail(message, signal?)`: rejects with an `Error` carrying `message`.
#[napi(ts_return_type = "Promise<number>")]
pub fn fail<'env>(
    env: &'env Env,
    message: String,
    signal: Option<Object<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    tethered_napi::spawn_native(env, signal, move |_token| -> napi::Result<u32> {
        Err(Error::new(Status::InvalidArg, message))
    })
}

/// `panics(message, signal?)`: the closure panics with `message`.
#[napi(ts_return_type = "Promise<number>")]
pub fn panics<'env>(
    env: &'env Env,
    message: String,
    signal: Option<Object<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    tethered_napi::spawn_native(env, signal, move |_token| -> u32 { panic!("{message}") })
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

/// `panickyValue(signal?)`: the closure returns a value whose conversion panics.
#[napi(ts_return_type = "Promise<never>")]
pub fn panicky_value<'env>(
    env: &'env Env,
    signal: Option<Object<'env>>,
) -> napi::Result<PromiseRaw<'env, PanickyValue>> {
    tethered_napi::spawn_native(env, signal, move |_token| PanickyValue)
}

/// At most two `scoped` jobs run at once; `cancelScoped()` cancels them all.
static SCOPE: LazyLock<NativeScope> = LazyLock::new(|| NativeScope::new().with_max_running(2));

/// `scoped(maxMs, signal?)`: `spin` in the addon's scope.
#[napi(ts_return_type = "Promise<number>")]
pub fn scoped<'env>(
    env: &'env Env,
    max_ms: u32,
    signal: Option<Object<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    tethered_napi::Builder::new()
        .name("scoped-spin")
        .scope(&SCOPE)
        .spawn(env, signal, move |token| work::spin(&token, ms(max_ms)))
}

/// `scopedJoined(maxMs, signal?)`: `spinJoined` in the addon's scope.
#[napi(ts_return_type = "Promise<number>")]
pub fn scoped_joined<'env>(
    env: &'env Env,
    max_ms: u32,
    signal: Option<Object<'env>>,
) -> napi::Result<PromiseRaw<'env, u32>> {
    tethered_napi::Builder::new()
        .scope(&SCOPE)
        .spawn_joined(env, signal, move |token| work::spin(&token, ms(max_ms)))
}

/// `cancelScoped(timeout)`: cancels every job of the scope, with `Timeout` or a custom reason.
#[napi]
pub fn cancel_scoped(timeout: bool) {
    let reason = if timeout {
        CancelReason::Timeout
    } else {
        CancelReason::custom("the scope was cancelled")
    };
    SCOPE.cancel_all(reason);
}

/// `cancelScopedFrom(afterMs)`: cancels every job of the scope from a thread of its own,
/// `afterMs` from now, with a custom reason.
#[napi]
pub fn cancel_scoped_from_thread(after_ms: u32) {
    std::thread::spawn(move || {
        std::thread::sleep(ms(after_ms));
        SCOPE.cancel_all(CancelReason::custom("cancelled from another thread"));
    });
}

/// tethered's counters for this addon's jobs.
#[napi(object)]
#[derive(Debug)]
pub struct Stats {
    /// Closures running now.
    pub running: u32,
    /// Jobs whose caller stopped waiting while their closure still runs.
    pub detached: u32,
    /// Closures that panicked, in all.
    pub panicked: u32,
}

/// `stats()`: tethered's counters.
#[napi]
pub fn stats() -> Stats {
    let stats = tethered::stats();
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    Stats {
        running: count(stats.running),
        detached: count(stats.detached),
        panicked: u32::try_from(stats.panicked).unwrap_or(u32::MAX),
    }
}

/// `live()`: how many of the addon's tethered closures run now.
#[napi]
pub fn live() -> u32 {
    u32::try_from(work::LIVE.load(std::sync::atomic::Ordering::SeqCst)).unwrap_or(u32::MAX)
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
    /// Its token's reason, as text.
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
