//! The native work the addon exports, plain Rust with no Node-API in it: loops that check their
//! token, one that ignores it, and the counters the JavaScript suite reads.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use tethered_napi::CancelToken;

/// The clock the suite times with: nanoseconds since the addon first looked.
static EPOCH: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Closures of this addon running right now (tethered's and the naive ones apart).
pub(crate) static LIVE: AtomicUsize = AtomicUsize::new(0);
pub(crate) static NAIVE_LIVE: AtomicUsize = AtomicUsize::new(0);
/// Bumped by `stopNaive()`: every naive loop started before returns.
pub(crate) static NAIVE_GENERATION: AtomicU64 = AtomicU64::new(0);
/// Closures whose token was cancelled already when they began: a queued job that started
/// after its cancel.
pub(crate) static STARTED_CANCELLED: AtomicUsize = AtomicUsize::new(0);

/// What each cancelled closure saw: its token's reason and cause (`Timeout`, `Shutdown`,
/// `Dropped: the client went away`, ...) and when it returned.
static STOPS: Mutex<Vec<(String, f64)>> = Mutex::new(Vec::new());

pub(crate) fn now_ns() -> f64 {
    EPOCH.elapsed().as_nanos() as f64
}

/// Counts a closure as live while it exists.
struct Live(&'static AtomicUsize);

impl Live {
    fn enter(counter: &'static AtomicUsize) -> Live {
        // ORDERING: SeqCst: the suite reads the counters from another thread and wants the
        // plain order of events.
        counter.fetch_add(1, Ordering::SeqCst);
        Live(counter)
    }

    /// [`enter`](Self::enter) for a tethered closure, which also counts a start after its
    /// cancel.
    fn begin(token: &CancelToken) -> Live {
        if token.is_cancelled() {
            // ORDERING: SeqCst, as in `enter`.
            STARTED_CANCELLED.fetch_add(1, Ordering::SeqCst);
        }
        Live::enter(&LIVE)
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        // ORDERING: SeqCst, as in `enter`.
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

fn record_stop(token: &CancelToken) {
    if let Some(reason) = token.reason() {
        let reason = match token.cause() {
            Some(cause) => format!("{reason:?}: {cause}"),
            None => format!("{reason:?}"),
        };
        STOPS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push((reason, now_ns()));
    }
}

/// What the cancelled closures saw since the last call, oldest first.
pub(crate) fn take_stops() -> Vec<(String, f64)> {
    std::mem::take(
        &mut *STOPS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()),
    )
}

/// One step of busy work: a little arithmetic the optimiser cannot drop.
fn step(x: &mut u64) {
    for _ in 0..64 {
        *x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    std::hint::black_box(*x);
}

/// Busy work until the token is cancelled or `max` has passed; the steps it took.
pub(crate) fn spin(token: &CancelToken, max: Duration) -> u32 {
    let _live = Live::begin(token);
    let started = Instant::now();
    let mut steps = 0u32;
    let mut x = 1u64;
    loop {
        // One step, then the check (one atomic load).
        step(&mut x);
        steps = steps.wrapping_add(1);
        if token.is_cancelled() {
            record_stop(token);
            return steps;
        }
        if steps.is_multiple_of(1024) && started.elapsed() >= max {
            return steps;
        }
    }
}

/// Busy for 1 ms in every 10 until the token is cancelled or `max` has passed: many of these
/// at once stay light on a small machine.
pub(crate) fn pulse(token: &CancelToken, max: Duration) -> u32 {
    let _live = Live::begin(token);
    let started = Instant::now();
    let mut pulses = 0u32;
    while started.elapsed() < max {
        let busy = Instant::now();
        while busy.elapsed() < Duration::from_millis(1) {
            if token.is_cancelled() {
                record_stop(token);
                return pulses;
            }
            std::hint::spin_loop();
        }
        pulses += 1;
        if token.wait_timeout(Duration::from_millis(9)).is_some() {
            record_stop(token);
            return pulses;
        }
    }
    pulses
}

/// Sleeps `duration` whatever its token says: a closure that ignores its token.
pub(crate) fn stubborn(duration: Duration) -> u32 {
    let _live = Live::enter(&LIVE);
    std::thread::sleep(duration);
    1
}

/// The naive loop: busy until `max` has passed, or `stopNaive()` cleans it up. Nothing else
/// reaches it once it runs.
pub(crate) fn naive_spin(max: Duration, generation: u64) -> u32 {
    let _live = Live::enter(&NAIVE_LIVE);
    let started = Instant::now();
    let mut steps = 0u32;
    let mut x = 1u64;
    loop {
        step(&mut x);
        steps = steps.wrapping_add(1);
        // ORDERING: Relaxed: the test's clean-up only needs the loop to see the bump soon.
        if steps.is_multiple_of(1024)
            && (started.elapsed() >= max || NAIVE_GENERATION.load(Ordering::Relaxed) != generation)
        {
            return steps;
        }
    }
}
