//! Paired round trips of the core in this tree against the core at another revision, built by
//! `against.py` beside this file into a scratch crate that depends on both (not a member of
//! the workspace). Each round times a batch of round trips of the raw primitive, the other
//! revision's adapter and this tree's, in rotation, so drift slower than a round cancels out
//! of the per-round ratios.
//!
//! With `concurrent` as its second argument, each round instead times a batch of [`JOBS`] tokio
//! jobs spawned at once from a task on a multi-thread runtime and then awaited in spawn order,
//! as `concurrent_paired` does.
//!
//! With `cancelled`, each round trip's job runs until it is cancelled: the caller cancels it
//! once it runs and awaits it.
//!
//! Run with: python3 crates/benchmarks/against.py <revision> [--concurrent | --cancelled]

use std::hint::black_box;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Round trips per timed batch, as in `round_trip_paired`.
const BATCH: u32 = 16;
/// Rounds before the measured ones.
const WARM_UP: usize = 50;

type RoundTrip = fn() -> Pin<Box<dyn Future<Output = u64>>>;

async fn batch(one: RoundTrip) -> Duration {
    let start = Instant::now();
    for _ in 0..BATCH {
        black_box(one().await);
    }
    start.elapsed()
}

/// The first quartile, the median and the third quartile (nearest rank).
fn quartiles(mut values: Vec<f64>) -> [f64; 3] {
    values.sort_by(f64::total_cmp);
    let rank = |p: f64| {
        let index = ((p * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1;
        values[index]
    };
    [rank(0.25), rank(0.5), rank(0.75)]
}

/// `[raw, other revision, this tree]`, rotated each round; returns the quartiles of other/raw,
/// this/raw and this/other.
async fn rounds(variants: [RoundTrip; 3], count: usize) -> [[f64; 3]; 3] {
    let mut ratios: [Vec<f64>; 3] = Default::default();
    for round in 0..WARM_UP + count {
        let mut times = [0.0; 3];
        for k in 0..3 {
            let i = (round + k) % 3;
            times[i] = batch(variants[i]).await.as_secs_f64();
        }
        if round >= WARM_UP {
            ratios[0].push(times[1] / times[0]);
            ratios[1].push(times[2] / times[0]);
            ratios[2].push(times[2] / times[1]);
        }
    }
    ratios.map(quartiles)
}

fn tokio_raw() -> Pin<Box<dyn Future<Output = u64>>> {
    Box::pin(async {
        tokio::task::spawn_blocking(|| black_box(1u64))
            .await
            .expect("the job ran")
    })
}

fn tokio_other() -> Pin<Box<dyn Future<Output = u64>>> {
    Box::pin(async {
        other_tokio::spawn_native(|_token| black_box(1u64))
            .await
            .expect("the job ran")
    })
}

fn tokio_this() -> Pin<Box<dyn Future<Output = u64>>> {
    Box::pin(async {
        this_tokio::spawn_native(|_token| black_box(1u64))
            .await
            .expect("the job ran")
    })
}

fn smol_raw() -> Pin<Box<dyn Future<Output = u64>>> {
    Box::pin(blocking::unblock(|| black_box(1u64)))
}

fn smol_other() -> Pin<Box<dyn Future<Output = u64>>> {
    Box::pin(async {
        other_smol::spawn_native(|_token| black_box(1u64))
            .await
            .expect("the job ran")
    })
}

fn smol_this() -> Pin<Box<dyn Future<Output = u64>>> {
    Box::pin(async {
        this_smol::spawn_native(|_token| black_box(1u64))
            .await
            .expect("the job ran")
    })
}

/// The time spent in `cancel()` calls, other revision's and this tree's, in nanoseconds.
static CANCEL_CALLS: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];

/// A flag the caller sets once the job runs, and waits for.
fn started() -> (Arc<AtomicBool>, Arc<AtomicBool>) {
    let flag = Arc::new(AtomicBool::new(false));
    (flag.clone(), flag)
}

fn wait_started(flag: &AtomicBool) {
    while !flag.load(Ordering::Acquire) {
        std::hint::spin_loop();
    }
}

fn cancelled_raw() -> Pin<Box<dyn Future<Output = u64>>> {
    Box::pin(async {
        let (running, seen) = started();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let job = tokio::task::spawn_blocking(move || {
            running.store(true, Ordering::Release);
            let mut spins = 0u64;
            while !stopped.load(Ordering::Acquire) {
                spins += 1;
                std::hint::spin_loop();
            }
            spins
        });
        wait_started(&seen);
        stop.store(true, Ordering::Release);
        job.await.expect("the job ran")
    })
}

fn cancelled_other() -> Pin<Box<dyn Future<Output = u64>>> {
    use other_core::Tethered;
    Box::pin(async {
        let (running, seen) = started();
        let job = other_tokio::spawn_native(move |token| {
            running.store(true, Ordering::Release);
            let mut spins = 0u64;
            while !token.is_cancelled() {
                spins += 1;
                std::hint::spin_loop();
            }
            spins
        });
        wait_started(&seen);
        let start = Instant::now();
        job.cancel(other_core::CancelReason::Requested);
        CANCEL_CALLS[0].fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        black_box(job.await.is_err()) as u64
    })
}

fn cancelled_this() -> Pin<Box<dyn Future<Output = u64>>> {
    use this_core::Tethered;
    Box::pin(async {
        let (running, seen) = started();
        let job = this_tokio::spawn_native(move |token| {
            running.store(true, Ordering::Release);
            let mut spins = 0u64;
            while !token.is_cancelled() {
                spins += 1;
                std::hint::spin_loop();
            }
            spins
        });
        wait_started(&seen);
        let start = Instant::now();
        job.cancel(this_core::CancelReason::Requested);
        CANCEL_CALLS[1].fetch_add(start.elapsed().as_nanos() as u64, Ordering::Relaxed);
        black_box(job.await.is_err()) as u64
    })
}

/// Jobs per batch in the concurrent mode, as in `concurrent_paired`.
const JOBS: u32 = 2_000;
/// Rounds before the measured ones in the concurrent mode.
const CONCURRENT_WARM_UP: usize = 10;

/// The six orders of the three variants, by index.
const ORDERS: [[usize; 3]; 6] = [
    [0, 1, 2],
    [2, 1, 0],
    [1, 2, 0],
    [0, 2, 1],
    [2, 0, 1],
    [1, 0, 2],
];

/// One concurrent batch: its time from the first spawn to the last join.
type Batch = fn() -> Pin<Box<dyn Future<Output = Duration> + Send>>;

/// One concurrent batch: [`JOBS`] jobs started by `spawn` at once, then awaited in spawn
/// order; its time from the first spawn to the last join.
async fn concurrent_batch<J, T, E>(spawn: impl Fn() -> J) -> Duration
where
    J: Future<Output = Result<T, E>>,
    E: std::fmt::Debug,
{
    let start = Instant::now();
    let jobs: Vec<_> = (0..JOBS).map(|_| spawn()).collect();
    for job in jobs {
        black_box(job.await.expect("the job ran"));
    }
    start.elapsed()
}

fn concurrent_raw() -> Pin<Box<dyn Future<Output = Duration> + Send>> {
    Box::pin(concurrent_batch(|| {
        tokio::task::spawn_blocking(|| black_box(1u64))
    }))
}

fn concurrent_other() -> Pin<Box<dyn Future<Output = Duration> + Send>> {
    Box::pin(concurrent_batch(|| {
        other_tokio::spawn_native(|_token| black_box(1u64))
    }))
}

fn concurrent_this() -> Pin<Box<dyn Future<Output = Duration> + Send>> {
    Box::pin(concurrent_batch(|| {
        this_tokio::spawn_native(|_token| black_box(1u64))
    }))
}

/// As [`rounds`], with one concurrent batch per variant and round.
async fn concurrent_rounds(variants: [Batch; 3], count: usize) -> [[f64; 3]; 3] {
    let mut ratios: [Vec<f64>; 3] = Default::default();
    for round in 0..CONCURRENT_WARM_UP + count {
        let mut times = [0.0; 3];
        // All six orders in turn: a batch runs faster or slower after another one (the pool's
        // threads are awake, or still busy), so no variant may always follow the same one.
        for i in ORDERS[round % ORDERS.len()] {
            times[i] = variants[i]().await.as_secs_f64();
        }
        if round >= CONCURRENT_WARM_UP {
            ratios[0].push(times[1] / times[0]);
            ratios[1].push(times[2] / times[0]);
            ratios[2].push(times[2] / times[1]);
        }
    }
    ratios.map(quartiles)
}

fn show(name: &str, [other, this, this_vs_other]: [[f64; 3]; 3]) {
    let q = |[q1, median, q3]: [f64; 3]| format!("{median:.3} ({q1:.3}-{q3:.3})");
    println!(
        "{name:<6} other/raw {}  this/raw {}  this/other {}",
        q(other),
        q(this),
        q(this_vs_other)
    );
}

fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .map_or(5_000, |rounds| rounds.parse().expect("a number of rounds"));
    if std::env::args().nth(2).as_deref() == Some("concurrent") {
        // As many workers as cores, and the batches on a worker, as in `concurrent_paired`.
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .build()
            .expect("a tokio runtime");
        let variants = [concurrent_raw, concurrent_other, concurrent_this];
        let ratios = runtime
            .block_on(runtime.spawn(concurrent_rounds(variants, count)))
            .expect("the rounds ran");
        show("tokio", ratios);
        return;
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    if std::env::args().nth(2).as_deref() == Some("cancelled") {
        show(
            "tokio",
            runtime.block_on(rounds(
                [cancelled_raw, cancelled_other, cancelled_this],
                count,
            )),
        );
        // Every round trip of each variant (the warm-up's too) made one call.
        let calls = ((WARM_UP + count) * BATCH as usize) as f64;
        let [other, this] = CANCEL_CALLS.each_ref().map(|sum| sum.load(Ordering::Relaxed) as f64);
        println!(
            "cancel() of a running job: other {:.0} ns, this {:.0} ns per call (this/other {:.3})",
            other / calls,
            this / calls,
            this / other
        );
        return;
    }
    show(
        "tokio",
        runtime.block_on(rounds([tokio_raw, tokio_other, tokio_this], count)),
    );
    show(
        "smol",
        futures_lite::future::block_on(rounds([smol_raw, smol_other, smol_this], count)),
    );
}
