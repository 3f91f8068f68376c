//! Comparison 4: what wrapping a future and linking tokens cost, against tokio-util.
//!
//! - `poll`: polling a future through `CancelOnDrop` against polling it bare ([`BATCH`] polls
//!   per iteration, so the report gives the cost of one).
//! - `guard`: `CancelOnDrop::new` and its drop before completion, which cancels, against
//!   tokio-util's `CancellationToken::new().drop_guard()` and its drop. Both make their token.
//!   `CancelSource::new().drop_guard()` runs alongside for context.
//! - `child`: `CancelToken::child()` created and dropped against tokio-util's `child_token()`,
//!   both on a long-lived parent.
//! - `fan_out`: cancelling a parent with [`CHILDREN`] children; the report gives the cost per
//!   child.
//! - `chain`: cancelling the root of a chain of [`LEVELS`] levels, per level.
//!
//! The fan-out and chain verdicts come from `tree_paired`, which measures the same cancels in
//! alternating rounds; these are shown beside them for context.
//!
//! Run with: cargo bench -p benchmarks --bench cancel_on_drop

use std::hint::black_box;
use std::pin::{Pin, pin};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput};
use tethered::{CancelOnDrop, CancelReason, CancelSource};
use tokio_util::sync::CancellationToken;

/// Polls per measured iteration in `poll`.
const BATCH: u64 = 1_000;

/// Children per parent in `fan_out`.
const CHILDREN: u64 = 1_000;

/// A future that is never ready and does a token amount of work per poll.
#[derive(Debug, Default)]
struct Ticks(u64);

impl Future for Ticks {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<()> {
        self.0 = black_box(self.0 + 1);
        Poll::Pending
    }
}

fn polls<F: Future>(mut future: Pin<&mut F>, cx: &mut Context<'_>) {
    for _ in 0..BATCH {
        black_box(future.as_mut().poll(cx).is_pending());
    }
}

fn poll(c: &mut Criterion) {
    let mut group = c.benchmark_group("poll");
    group.throughput(Throughput::Elements(BATCH));
    let mut cx = Context::from_waker(Waker::noop());

    let mut bare = pin!(Ticks::default());
    group.bench_function("bare", |b| b.iter(|| polls(bare.as_mut(), &mut cx)));

    let mut wrapped = pin!(CancelOnDrop::new(Ticks::default(), CancelSource::new()));
    group.bench_function("cancel_on_drop", |b| {
        b.iter(|| polls(wrapped.as_mut(), &mut cx))
    });
    group.finish();
}

fn guard(c: &mut Criterion) {
    let mut group = c.benchmark_group("guard");
    group.bench_function("tokio_util_drop_guard", |b| {
        b.iter(|| drop(black_box(CancellationToken::new().drop_guard())))
    });
    group.bench_function("cancel_on_drop", |b| {
        b.iter(|| {
            drop(black_box(CancelOnDrop::new(
                Ticks::default(),
                CancelSource::new(),
            )))
        })
    });
    group.bench_function("cancel_guard", |b| {
        b.iter(|| drop(black_box(CancelSource::new().drop_guard())))
    });
    group.finish();
}

fn child(c: &mut Criterion) {
    let mut group = c.benchmark_group("child");
    let parent = CancellationToken::new();
    group.bench_function("tokio_util", |b| {
        b.iter(|| drop(black_box(parent.child_token())))
    });
    let parent = CancelSource::new().token();
    group.bench_function("tethered", |b| b.iter(|| drop(black_box(parent.child()))));
    group.finish();
}

fn fan_out(c: &mut Criterion) {
    let mut group = c.benchmark_group("fan_out");
    group.throughput(Throughput::Elements(CHILDREN));
    // Building and dropping the tree is setup, outside the timing: only the cancel is timed.
    group.bench_function("tokio_util", |b| {
        b.iter_batched(
            || {
                let parent = CancellationToken::new();
                let children: Vec<_> = (0..CHILDREN).map(|_| parent.child_token()).collect();
                (parent, children)
            },
            |(parent, children)| {
                parent.cancel();
                (parent, children)
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("tethered", |b| {
        b.iter_batched(
            || {
                let parent = CancelSource::new();
                let children: Vec<_> = (0..CHILDREN).map(|_| parent.token().child()).collect();
                (parent, children)
            },
            |(parent, children)| {
                parent.cancel(CancelReason::Requested);
                (parent, children)
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

/// Levels of the chain in `chain`: deep enough that the per-level cost dominates.
const LEVELS: u64 = 1_000;

fn chain(c: &mut Criterion) {
    let mut group = c.benchmark_group("chain");
    group.throughput(Throughput::Elements(LEVELS));
    // As in `fan_out`, only the cancel of the root is timed; each level holds its handle.
    group.bench_function("tokio_util", |b| {
        b.iter_batched(
            || {
                let root = CancellationToken::new();
                let mut levels = vec![root.clone()];
                for _ in 0..LEVELS {
                    let next = levels.last().unwrap().child_token();
                    levels.push(next);
                }
                levels
            },
            |levels| {
                levels[0].cancel();
                levels
            },
            BatchSize::SmallInput,
        )
    });
    group.bench_function("tethered", |b| {
        b.iter_batched(
            || {
                let root = CancelSource::new();
                let mut levels = vec![root.clone()];
                for _ in 0..LEVELS {
                    let next = levels.last().unwrap().child();
                    levels.push(next);
                }
                levels
            },
            |levels| {
                levels[0].cancel(CancelReason::Requested);
                levels
            },
            BatchSize::SmallInput,
        )
    });
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

fn main() {
    let mut criterion = config().configure_from_args();
    poll(&mut criterion);
    guard(&mut criterion);
    child(&mut criterion);
    fan_out(&mut criterion);
    chain(&mut criterion);
    criterion.final_summary();
}
