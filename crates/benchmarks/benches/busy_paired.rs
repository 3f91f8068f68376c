//! Comparison 3, paired: how long after the cancel a busy closure sees it, a closure spinning
//! on its tethered token against one spinning on a bare `Arc<AtomicBool>`, in two placements:
//!
//! - `pool`: on a tokio runtime's blocking pool. tethered: the closure of a
//!   `tethered_tokio::spawn_native` job, cancelled by the drop of its handle; bare: a
//!   `spawn_blocking` closure, stopped by a store of `true` into the flag.
//! - `thread`: on a thread of its own. tethered: the closure of `AbortableNative::spawn`,
//!   cancelled by the drop of its handle; bare: a `std::thread::spawn` closure and the flag.
//!
//! Each sample starts a fresh closure, waits until it is spinning, takes the time right before
//! the drop (or the store), and takes the time at which the closure saw the stop, on the
//! closure's thread (see [`Probe`]); the latency is the difference. This is `latency`'s busy
//! mode, paired: what a sample costs moves with wherever the scheduler put the two threads and
//! with what else runs, by more than the difference measured, so each round takes one sample
//! of each variant back to back (which goes first alternates), and the results are the median
//! over rounds of the per-round difference (tethered minus bare, in nanoseconds) and of the
//! per-round ratio, each with its quartiles.
//!
//! Results go to `target/tethered-bench/busy.json` (see `report.py`).
//!
//! Run with: cargo bench -p benchmarks --bench busy_paired

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use benchmarks::{Invocation, Paired, Probe, spin_until, write_results};
use tethered::AbortableNative;

/// One sample of one variant: the latency from right before the cancel to the closure seeing
/// it.
type Sampler = fn() -> Duration;

fn pool_atomic_bool() -> Duration {
    let (probe, ready, tx) = Probe::new();
    let flag = Arc::new(AtomicBool::new(false));
    let polled = flag.clone();
    drop(tokio::task::spawn_blocking(move || {
        spin_until(&ready, &tx, || polled.load(Ordering::Acquire))
    }));
    probe.wait_ready();
    probe.time(|| flag.store(true, Ordering::Release))
}

fn pool_tethered() -> Duration {
    let (probe, ready, tx) = Probe::new();
    let job =
        tethered_tokio::spawn_native(move |token| spin_until(&ready, &tx, || token.is_cancelled()));
    probe.wait_ready();
    probe.time(|| drop(job))
}

fn thread_atomic_bool() -> Duration {
    let (probe, ready, tx) = Probe::new();
    let flag = Arc::new(AtomicBool::new(false));
    let polled = flag.clone();
    // Detached, as the tethered job's thread is once its handle is dropped.
    drop(std::thread::spawn(move || {
        spin_until(&ready, &tx, || polled.load(Ordering::Acquire))
    }));
    probe.wait_ready();
    probe.time(|| flag.store(true, Ordering::Release))
}

fn thread_tethered() -> Duration {
    let (probe, ready, tx) = Probe::new();
    let job = AbortableNative::spawn(move |token| spin_until(&ready, &tx, || token.is_cancelled()));
    probe.wait_ready();
    probe.time(|| drop(job))
}

fn rounds(bare: Sampler, tethered: Sampler, warm_up: usize, rounds: usize) -> Paired {
    let mut paired = Paired::default();
    for round in 0..warm_up + rounds {
        let (bare_time, tethered_time) = if round % 2 == 0 {
            let bare_time = bare();
            (bare_time, tethered())
        } else {
            let tethered_time = tethered();
            (bare(), tethered_time)
        };
        if round >= warm_up {
            paired.push(bare_time, tethered_time, 1);
        }
    }
    paired
}

fn main() {
    let invocation = Invocation::from_args();
    let (warm_up, count) = if invocation.measure {
        (200, 10_000)
    } else {
        (2, 10)
    };
    // A current-thread runtime, as in `latency`: this thread is in it (`enter`) but never
    // drives it, so the only threads that run are this one and the closure's.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    let _inside = runtime.enter();

    let placements: [(&str, Sampler, Sampler); 2] = [
        ("pool", pool_atomic_bool, pool_tethered),
        ("thread", thread_atomic_bool, thread_tethered),
    ];
    let mut fields = Vec::new();
    for (name, bare, tethered) in placements {
        if !invocation.selects(name) {
            continue;
        }
        let paired = rounds(bare, tethered, warm_up, count);
        fields.push(paired.report_with_difference(name, "atomic_bool"));
    }
    if invocation.measure && invocation.filter.is_none() {
        write_results(
            "busy",
            &format!("{{\"rounds\": {count}, {}}}\n", fields.join(", ")),
        );
    }
}
