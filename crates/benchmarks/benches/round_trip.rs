//! Comparison 2: spawn plus await of a trivial job, each adapter against its runtime's own
//! primitive, on the same executor and pool, one job after another.
//!
//! - tokio: `tokio::task::spawn_blocking` against `tethered_tokio::spawn_native`, awaited on
//!   a current-thread runtime.
//! - smol: `blocking::unblock` against `tethered_smol::spawn_native`, awaited with
//!   `futures_lite::future::block_on`.
//! - async-std: `async_std::task::spawn_blocking` against `tethered_async_std::spawn_native`,
//!   awaited with `async_std::task::block_on`.
//!
//! Criterion measures one variant, then the other, so the drift of a shared machine between
//! the two lands in their ratio; `round_trip_paired` measures the same round trips in
//! alternating batches, and BENCHMARKS.md takes its verdict from there.
//!
//! Run with: cargo bench -p benchmarks --bench round_trip

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkGroup, Criterion, measurement::WallTime};

/// The timed loop, handed to an executor's `block_on`.
type Task = std::pin::Pin<Box<dyn Future<Output = Duration>>>;

/// Times `iters` sequential round trips of `one`, inside `block_on`.
fn timed<B, F, Fut>(block_on: B, one: F) -> impl FnMut(u64) -> Duration
where
    B: Fn(Task) -> Duration,
    F: Fn() -> Fut + Copy + 'static,
    Fut: Future<Output = u64>,
{
    move |iters| {
        block_on(Box::pin(async move {
            let start = Instant::now();
            for _ in 0..iters {
                black_box(one().await);
            }
            start.elapsed()
        }))
    }
}

fn bench_pair<B, RawF, RawFut, TetF, TetFut>(
    group: &mut BenchmarkGroup<'_, WallTime>,
    block_on: B,
    raw: RawF,
    tethered: TetF,
) where
    B: Fn(Task) -> Duration + Copy,
    RawF: Fn() -> RawFut + Copy + 'static,
    RawFut: Future<Output = u64>,
    TetF: Fn() -> TetFut + Copy + 'static,
    TetFut: Future<Output = u64>,
{
    group.bench_function("raw", |b| b.iter_custom(timed(block_on, raw)));
    group.bench_function("tethered", |b| b.iter_custom(timed(block_on, tethered)));
}

fn tokio(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    let mut group = c.benchmark_group("round_trip_tokio");
    bench_pair(
        &mut group,
        |fut| runtime.block_on(fut),
        || async {
            tokio::task::spawn_blocking(|| black_box(1u64))
                .await
                .expect("the job ran")
        },
        || async {
            tethered_tokio::spawn_native(|_token| black_box(1u64))
                .await
                .expect("the job ran")
        },
    );
    group.finish();
}

fn smol(c: &mut Criterion) {
    let mut group = c.benchmark_group("round_trip_smol");
    bench_pair(
        &mut group,
        futures_lite::future::block_on,
        || blocking::unblock(|| black_box(1u64)),
        || async {
            tethered_smol::spawn_native(|_token| black_box(1u64))
                .await
                .expect("the job ran")
        },
    );
    group.finish();
}

fn async_std(c: &mut Criterion) {
    let mut group = c.benchmark_group("round_trip_async_std");
    bench_pair(
        &mut group,
        async_std::task::block_on,
        || async_std::task::spawn_blocking(|| black_box(1u64)),
        || async {
            tethered_async_std::spawn_native(|_token| black_box(1u64))
                .await
                .expect("the job ran")
        },
    );
    group.finish();
}

fn config() -> Criterion {
    // A round trip is tens of microseconds with a thread wake-up on either side, so its
    // spread is wide: measure longer than the nanosecond suites.
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
}

fn main() {
    let mut criterion = config().configure_from_args();
    tokio(&mut criterion);
    smol(&mut criterion);
    async_std(&mut criterion);
    criterion.final_summary();
}
