//! Comparison 2, concurrent and paired: 2,000 trivial jobs spawned at once on a multi-thread
//! tokio runtime's blocking pool and then awaited, `tethered_tokio::spawn_native` against
//! tokio's own `spawn_blocking`, in interleaved batches.
//!
//! `round_trip_paired` awaits each job before it spawns the next, so the pool runs one job at a
//! time; a service spawns many at once, and then its jobs contend for the pool's queue and
//! threads, and the wake-ups of the task awaiting them overlap. Here a task on one of the
//! runtime's workers spawns [`JOBS`] jobs in a row, then awaits every handle in spawn order;
//! a batch is timed from its first spawn to its last join. Each round times one batch of each
//! variant back to back (in an order that changes from round to round), and each result is
//! the median over rounds of the per-round ratio, with its quartiles: a batch lasts milliseconds, and on a
//! shared two-core machine what hundreds of pool threads cost drifts by more than that within
//! seconds, so the variants are never measured one fully after the other. The pool keeps its
//! threads between batches (tokio's default keep-alive is ten seconds), so after the warm-up
//! rounds neither variant pays for thread creation the other skips.
//!
//! A third variant, the floor, is `spawn_blocking` plus what a job's handle necessarily adds
//! beyond it: a tethered job lives in two allocations of its own (the job, 256 bytes with its
//! `Arc` counts for this closure, and its token's state, 112), both made on the spawning
//! thread, each shared between the awaiting side and the pool thread and let go of by both.
//! The floor makes two `Arc`s of those sizes the same way: the closure takes a clone of each to
//! the pool thread and drops them there, and the awaiting task drops its own after the join.
//! The allocation benchmark holds tethered to two allocations per job beyond the runtime's; the
//! floor shows what those two cost here, so tethered / floor is what its code costs beyond
//! them. Each round times all three, in one of the six orders, taken in turn.
//!
//! Results go to `target/tethered-bench/concurrent.json` (see `report.py`).
//!
//! Run with: cargo bench -p benchmarks --bench concurrent_paired

use std::hint::black_box;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use benchmarks::{Invocation, Paired, write_results};

/// Jobs spawned at once in each timed batch.
const JOBS: u32 = 2_000;

/// One batch of one variant: its time from the first spawn to the last join.
type Batch = fn() -> Pin<Box<dyn Future<Output = Duration> + Send>>;

fn raw() -> Pin<Box<dyn Future<Output = Duration> + Send>> {
    Box::pin(async {
        let start = Instant::now();
        let jobs: Vec<_> = (0..JOBS)
            .map(|_| tokio::task::spawn_blocking(|| black_box(1u64)))
            .collect();
        for job in jobs {
            black_box(job.await.expect("the job ran"));
        }
        start.elapsed()
    })
}

/// The job's own allocation, with its `Arc` counts: 256 bytes.
type JobSized = [u64; 30];

/// The token's state, with its `Arc` counts: 112 bytes.
type TokenSized = [u64; 12];

fn floor() -> Pin<Box<dyn Future<Output = Duration> + Send>> {
    Box::pin(async {
        let start = Instant::now();
        let jobs: Vec<_> = (0..JOBS)
            .map(|_| {
                let job = Arc::new(JobSized::default());
                let token = Arc::new(TokenSized::default());
                let (pool_job, pool_token) = (job.clone(), token.clone());
                let join =
                    tokio::task::spawn_blocking(move || black_box(pool_job[0] + pool_token[0] + 1));
                (join, job, token)
            })
            .collect();
        for (join, job, token) in jobs {
            black_box(join.await.expect("the job ran"));
            drop((job, token));
        }
        start.elapsed()
    })
}

fn tethered() -> Pin<Box<dyn Future<Output = Duration> + Send>> {
    Box::pin(async {
        let start = Instant::now();
        let jobs: Vec<_> = (0..JOBS)
            .map(|_| tethered_tokio::spawn_native(|_token| black_box(1u64)))
            .collect();
        for job in jobs {
            black_box(job.await.expect("the job ran"));
        }
        start.elapsed()
    })
}

/// The three comparisons, each from the same rounds.
#[derive(Default)]
struct Rounds {
    /// tethered against raw `spawn_blocking`: the target.
    tethered: Paired,
    /// The floor against raw `spawn_blocking`: what a job's two allocations cost.
    floor: Paired,
    /// tethered against the floor: what tethered's code costs beyond them.
    above_floor: Paired,
}

/// The six orders in which a round times the three variants (raw, floor, tethered), by index.
const ORDERS: [[usize; 3]; 6] = [
    [0, 1, 2],
    [2, 1, 0],
    [1, 2, 0],
    [0, 2, 1],
    [2, 0, 1],
    [1, 0, 2],
];

async fn rounds(warm_up: usize, rounds: usize) -> Rounds {
    let variants: [Batch; 3] = [raw, floor, tethered];
    let mut paired = Rounds::default();
    for round in 0..warm_up + rounds {
        let mut times = [Duration::ZERO; 3];
        for variant in ORDERS[round % ORDERS.len()] {
            times[variant] = variants[variant]().await;
        }
        if round >= warm_up {
            let [raw_time, floor_time, tethered_time] = times;
            paired.tethered.push(raw_time, tethered_time, JOBS);
            paired.floor.push(raw_time, floor_time, JOBS);
            paired.above_floor.push(floor_time, tethered_time, JOBS);
        }
    }
    paired
}

fn main() {
    let invocation = Invocation::from_args();
    let (warm_up, count) = if invocation.measure {
        (20, 1_000)
    } else {
        (1, 2)
    };
    // As many workers as cores, tokio's default; the blocking pool's default limit (512
    // threads) too.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .build()
        .expect("a tokio runtime");

    let mut fields = Vec::new();
    let name = "tokio";
    if invocation.selects(name) {
        // On a worker, as a service's task would spawn them, not on the thread in `block_on`.
        let paired = runtime
            .block_on(runtime.spawn(rounds(warm_up, count)))
            .expect("the rounds ran");
        fields.push(paired.tethered.report(name, "raw"));
        fields.push(paired.floor.report_as("tokio_floor", "raw", "floor"));
        fields.push(
            paired
                .above_floor
                .report_as("tokio_above_floor", "floor", "tethered"),
        );
    }
    if invocation.measure && invocation.filter.is_none() {
        write_results(
            "concurrent",
            &format!(
                "{{\"jobs\": {JOBS}, \"rounds\": {count}, {}}}\n",
                fields.join(", ")
            ),
        );
    }
}
