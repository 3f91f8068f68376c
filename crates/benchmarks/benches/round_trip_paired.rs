//! Comparison 2, paired: spawn plus await of a trivial job, each adapter against its runtime's
//! own primitive, measured in alternating batches so both see the same machine.
//!
//! A round trip is two thread wake-ups (the pool thread's, then the awaiting thread's), and on
//! a shared two-core machine what those cost drifts by 10-30% within seconds, with whatever
//! else runs and wherever the scheduler puts the threads. The criterion suite (`round_trip`)
//! measures one variant fully, then the other, so that drift lands in its ratio. Here each
//! round times one batch of [`BATCH`] round trips of each variant back to back (which goes
//! first alternates), and the result is the median over rounds of the per-round ratio:
//! drift slower than a round cancels out. Within a batch the jobs run one after another, as
//! in the criterion suite, so each variant keeps its own rhythm.
//!
//! Results go to `target/tethered-bench/round_trip.json` (see `report.py`).
//!
//! Run with: cargo bench -p benchmarks --bench round_trip_paired

use std::hint::black_box;
use std::pin::Pin;
use std::time::{Duration, Instant};

use benchmarks::{Invocation, Paired, write_results};

/// Round trips per timed batch.
const BATCH: u32 = 16;

/// One round trip of one variant.
type RoundTrip = fn() -> Pin<Box<dyn Future<Output = u64>>>;

/// The paired rounds of one runtime, run inside its `block_on`.
type Rounds = Pin<Box<dyn Future<Output = Paired>>>;

/// The time of [`BATCH`] round trips, one after another.
async fn batch(one: RoundTrip) -> Duration {
    let start = Instant::now();
    for _ in 0..BATCH {
        black_box(one().await);
    }
    start.elapsed()
}

async fn rounds(raw: RoundTrip, tethered: RoundTrip, warm_up: usize, rounds: usize) -> Paired {
    let mut paired = Paired::default();
    for round in 0..warm_up + rounds {
        let (raw_time, tethered_time) = if round % 2 == 0 {
            let raw_time = batch(raw).await;
            (raw_time, batch(tethered).await)
        } else {
            let tethered_time = batch(tethered).await;
            (batch(raw).await, tethered_time)
        };
        if round >= warm_up {
            paired.push(raw_time, tethered_time, BATCH);
        }
    }
    paired
}

fn tokio_raw() -> Pin<Box<dyn Future<Output = u64>>> {
    Box::pin(async {
        tokio::task::spawn_blocking(|| black_box(1u64))
            .await
            .expect("the job ran")
    })
}

fn tokio_tethered() -> Pin<Box<dyn Future<Output = u64>>> {
    Box::pin(async {
        tethered_tokio::spawn_native(|_token| black_box(1u64))
            .await
            .expect("the job ran")
    })
}

fn smol_raw() -> Pin<Box<dyn Future<Output = u64>>> {
    Box::pin(blocking::unblock(|| black_box(1u64)))
}

fn smol_tethered() -> Pin<Box<dyn Future<Output = u64>>> {
    Box::pin(async {
        tethered_smol::spawn_native(|_token| black_box(1u64))
            .await
            .expect("the job ran")
    })
}

fn async_std_raw() -> Pin<Box<dyn Future<Output = u64>>> {
    Box::pin(async_std::task::spawn_blocking(|| black_box(1u64)))
}

fn async_std_tethered() -> Pin<Box<dyn Future<Output = u64>>> {
    Box::pin(async {
        tethered_async_std::spawn_native(|_token| black_box(1u64))
            .await
            .expect("the job ran")
    })
}

fn main() {
    let invocation = Invocation::from_args();
    let (warm_up, count) = if invocation.measure {
        (50, 1_000)
    } else {
        (1, 4)
    };
    let tokio_runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    type BlockOn<'a> = Box<dyn Fn(Rounds) -> Paired + 'a>;
    let runtimes: [(&str, BlockOn<'_>, RoundTrip, RoundTrip); 3] = [
        (
            "tokio",
            Box::new(|f| tokio_runtime.block_on(f)),
            tokio_raw,
            tokio_tethered,
        ),
        (
            "smol",
            Box::new(futures_lite::future::block_on),
            smol_raw,
            smol_tethered,
        ),
        (
            "async_std",
            Box::new(async_std::task::block_on),
            async_std_raw,
            async_std_tethered,
        ),
    ];

    let mut fields = Vec::new();
    for (name, block_on, raw, tethered) in &runtimes {
        if !invocation.selects(name) {
            continue;
        }
        let paired = block_on(Box::pin(rounds(*raw, *tethered, warm_up, count)));
        fields.push(paired.report(name, "raw"));
    }
    if invocation.measure && invocation.filter.is_none() {
        write_results(
            "round_trip",
            &format!(
                "{{\"batch\": {BATCH}, \"rounds\": {count}, {}}}\n",
                fields.join(", ")
            ),
        );
    }
}
