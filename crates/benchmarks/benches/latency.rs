//! Comparison 3: cancel-to-observe latency, from the drop of a job's handle on the async side to
//! the native closure seeing the cancel. Criterion reports means; this needs the median and the
//! 99th percentile, so it times each cancel itself and keeps every sample.
//!
//! Each sample puts a fresh job on a tokio runtime's blocking pool, waits until its closure is
//! polling (or parked), notes the time, drops the handle, and takes the time at which the
//! closure saw the cancel. Both clocks are the same monotonic clock. The variants of a mode run
//! interleaved, one sample of each per round, so load that comes and goes hits them alike.
//!
//! - `busy`: the closure spins on the check. Floor: an `AtomicBool` stored by the cancelling
//!   thread. For context: a tokio-util `CancellationToken`, whose check takes a mutex, and
//!   `source_cancel`, a token cancelled through its `CancelSource` rather than by dropping an
//!   `AbortableNative` (the cancel alone, without the handle's drop).
//! - `parked`: the closure sleeps in `CancelToken::wait_timeout`. Floor: a `Mutex<bool>` and a
//!   `Condvar`, the futex wake-up every parked wait pays.
//!
//! Results go to `target/tethered-bench/latency.json` (see `report.py`).
//!
//! Run with: cargo bench -p benchmarks --bench latency

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use benchmarks::{Invocation, Probe, Summary, spin_until, write_results};
use tethered::JobOptions;
use tethered_tokio::TokioSpawner;
use tokio::runtime::Handle;
use tokio_util::sync::CancellationToken;

/// How long the cancelling side waits, after the closure said it is about to park, before it
/// cancels: long enough for the closure to be asleep in the kernel.
const PARK_SETTLE: Duration = Duration::from_micros(200);

fn busy_atomic_bool(pool: &Handle, _spawner: &TokioSpawner) -> Duration {
    let (probe, ready, tx) = Probe::new();
    let flag = Arc::new(AtomicBool::new(false));
    let polled = flag.clone();
    drop(pool.spawn_blocking(move || spin_until(&ready, &tx, || polled.load(Ordering::Acquire))));
    probe.wait_ready();
    probe.time(|| flag.store(true, Ordering::Release))
}

fn busy_tethered(_pool: &Handle, spawner: &TokioSpawner) -> Duration {
    let (probe, ready, tx) = Probe::new();
    let job = tethered::spawn(JobOptions::new().on(spawner.clone()), move |token| {
        spin_until(&ready, &tx, || token.is_cancelled())
    })
    .expect("the pool takes the job");
    probe.wait_ready();
    probe.time(|| drop(job))
}

fn busy_source_cancel(_pool: &Handle, spawner: &TokioSpawner) -> Duration {
    let (probe, ready, tx) = Probe::new();
    let source = tethered::CancelSource::new();
    let token = source.token();
    drop(
        spawner
            .handle()
            .spawn_blocking(move || spin_until(&ready, &tx, || token.is_cancelled())),
    );
    probe.wait_ready();
    probe.time(|| {
        source.cancel(tethered::CancelReason::Dropped);
    })
}

fn busy_tokio_util(pool: &Handle, _spawner: &TokioSpawner) -> Duration {
    let (probe, ready, tx) = Probe::new();
    let guard = CancellationToken::new().drop_guard();
    let polled = guard.token().clone();
    drop(pool.spawn_blocking(move || spin_until(&ready, &tx, || polled.is_cancelled())));
    probe.wait_ready();
    probe.time(|| drop(guard))
}

fn parked_condvar(pool: &Handle, _spawner: &TokioSpawner) -> Duration {
    let (probe, ready, tx) = Probe::new();
    let pair = Arc::new((Mutex::new(false), Condvar::new()));
    let waiter = pair.clone();
    drop(pool.spawn_blocking(move || {
        let (lock, changed) = &*waiter;
        let mut cancelled = lock.lock().expect("unpoisoned");
        ready.store(true, Ordering::Release);
        while !*cancelled {
            cancelled = changed.wait(cancelled).expect("unpoisoned");
        }
        let seen = Instant::now();
        drop(cancelled);
        let _ = tx.send(seen);
    }));
    probe.wait_ready();
    std::thread::sleep(PARK_SETTLE);
    probe.time(|| {
        let (lock, changed) = &*pair;
        *lock.lock().expect("unpoisoned") = true;
        changed.notify_all();
    })
}

fn parked_tethered(_pool: &Handle, spawner: &TokioSpawner) -> Duration {
    let (probe, ready, tx) = Probe::new();
    let job = tethered::spawn(JobOptions::new().on(spawner.clone()), move |token| {
        ready.store(true, Ordering::Release);
        let reason = token.wait_timeout(Duration::from_secs(60));
        let seen = Instant::now();
        assert!(reason.is_some(), "cancelled, not timed out");
        let _ = tx.send(seen);
    })
    .expect("the pool takes the job");
    probe.wait_ready();
    std::thread::sleep(PARK_SETTLE);
    probe.time(|| drop(job))
}

type Sampler = fn(&Handle, &TokioSpawner) -> Duration;

/// Runs `rounds` rounds of one sample per variant (after `warm_up` discarded rounds) and
/// returns each variant's summary, as a JSON object keyed by variant.
fn mode(
    invocation: &Invocation,
    mode: &str,
    variants: &[(&str, Sampler)],
    warm_up: usize,
    rounds: usize,
    pool: &Handle,
) -> String {
    let variants: Vec<_> = variants
        .iter()
        .filter(|(name, _)| invocation.selects(&format!("{mode}/{name}")))
        .collect();
    let spawner = TokioSpawner::new(pool.clone());
    let mut samples = vec![Vec::with_capacity(rounds); variants.len()];
    for round in 0..warm_up + rounds {
        for (i, (_, sample)) in variants.iter().enumerate() {
            let latency = sample(pool, &spawner);
            if round >= warm_up {
                samples[i].push(latency);
            }
        }
    }
    let mut fields = Vec::new();
    for ((name, _), samples) in variants.iter().zip(&samples) {
        let summary = Summary::of(samples);
        println!(
            "{mode}/{name:<12} median {:>8.0} ns   p99 {:>8.0} ns   ({} samples)",
            summary.median_ns, summary.p99_ns, summary.samples
        );
        fields.push(format!("\"{name}\": {}", summary.to_json()));
    }
    format!("{{{}}}", fields.join(", "))
}

fn main() {
    let invocation = Invocation::from_args();
    let (warm_up, busy_rounds, parked_rounds) = if invocation.measure {
        (200, 5_000, 2_000)
    } else {
        (2, 10, 10)
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    let pool = runtime.handle();

    let busy: [(&str, Sampler); 4] = [
        ("atomic_bool", busy_atomic_bool),
        ("tethered", busy_tethered),
        ("source_cancel", busy_source_cancel),
        ("tokio_util", busy_tokio_util),
    ];
    let parked: [(&str, Sampler); 2] = [("condvar", parked_condvar), ("tethered", parked_tethered)];
    let busy = mode(&invocation, "busy", &busy, warm_up, busy_rounds, pool);
    let parked = mode(&invocation, "parked", &parked, warm_up, parked_rounds, pool);

    if invocation.measure && invocation.filter.is_none() {
        write_results(
            "latency",
            &format!(
                "{{\"busy\": {busy}, \"parked\": {parked}, \"park_settle_ns\": {}}}\n",
                PARK_SETTLE.as_nanos()
            ),
        );
    }
}
