//! Comparison 2, concurrent and paired: 2,000 trivial jobs spawned at once on a multi-thread
//! tokio runtime's blocking pool and then awaited, `tethered_tokio::spawn_native` against
//! tokio's own `spawn_blocking`, in alternating batches.
//!
//! `round_trip_paired` awaits each job before it spawns the next, so the pool runs one job at a
//! time; a service spawns many at once, and then its jobs contend for the pool's queue and
//! threads, and the wake-ups of the task awaiting them overlap. Here a task on one of the
//! runtime's workers spawns [`JOBS`] jobs in a row, then awaits every handle in spawn order;
//! a batch is timed from its first spawn to its last join. Each round times one batch of each
//! variant back to back (which goes first alternates), and the result is the median over
//! rounds of the per-round ratio, with its quartiles: a batch lasts milliseconds, and on a
//! shared two-core machine what hundreds of pool threads cost drifts by more than that within
//! seconds, so the variants are never measured one fully after the other. The pool keeps its
//! threads between batches (tokio's default keep-alive is ten seconds), so after the warm-up
//! rounds neither variant pays for thread creation the other skips.
//!
//! Results go to `target/tethered-bench/concurrent.json` (see `report.py`).
//!
//! Run with: cargo bench -p benchmarks --bench concurrent_paired

use std::hint::black_box;
use std::pin::Pin;
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

async fn rounds(raw: Batch, tethered: Batch, warm_up: usize, rounds: usize) -> Paired {
    let mut paired = Paired::default();
    for round in 0..warm_up + rounds {
        let (raw_time, tethered_time) = if round % 2 == 0 {
            let raw_time = raw().await;
            (raw_time, tethered().await)
        } else {
            let tethered_time = tethered().await;
            (raw().await, tethered_time)
        };
        if round >= warm_up {
            paired.push(raw_time, tethered_time, JOBS);
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
            .block_on(runtime.spawn(rounds(raw, tethered, warm_up, count)))
            .expect("the rounds ran");
        fields.push(paired.report(name, "raw"));
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
