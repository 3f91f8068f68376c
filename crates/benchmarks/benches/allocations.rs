//! Comparison 5: heap allocations per job through each spawner, against the runtime's own
//! primitive, counted by a global allocator (`stats_alloc`, so no unsafe code here).
//!
//! Each case runs a warm-up (so pools have their threads and queues their capacity), then
//! spawns and awaits `JOBS` trivial jobs one after another and divides the allocator's counts
//! by `JOBS`. The counts are process-wide, so they include what the pool threads allocate.
//!
//! Results go to `target/tethered-bench/allocations.json` (see `report.py`).
//!
//! Run with: cargo bench -p benchmarks --bench allocations

use std::alloc::System;
use std::hint::black_box;

use benchmarks::{Invocation, write_results};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};
use tethered::AbortableNative;

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Allocations and bytes per job.
#[derive(Debug, Clone, Copy)]
struct PerJob {
    allocations: f64,
    reallocations: f64,
    bytes: f64,
}

/// Runs `warm_up` jobs, then counts what `jobs` more allocate.
fn count(warm_up: usize, jobs: usize, mut one: impl FnMut()) -> PerJob {
    for _ in 0..warm_up {
        one();
    }
    let before = GLOBAL.stats();
    for _ in 0..jobs {
        one();
    }
    let after = GLOBAL.stats();
    let per_job = |n: usize| n as f64 / jobs as f64;
    PerJob {
        allocations: per_job(after.allocations - before.allocations),
        reallocations: per_job(after.reallocations - before.reallocations),
        bytes: per_job(after.bytes_allocated - before.bytes_allocated),
    }
}

/// Every case, as `spawner/variant`; each runs in a process of its own.
const CASES: [&str; 11] = [
    "tokio/raw",
    "tokio/tethered",
    "smol/raw",
    "smol/tethered",
    "async_std/raw",
    "async_std/tethered",
    "thread/raw",
    // `ThreadSpawner` names its threads; this is the same spawn with a name.
    "thread/raw_named",
    "thread/tethered",
    // Not jobs: an idle child token of a shared parent, kept alive (memory per child).
    "child/tokio_util",
    "child/tethered",
];

/// One spawn-and-await of a trivial job for the case called `name`.
fn job(name: &str) -> Box<dyn FnMut()> {
    match name {
        "tokio/raw" | "tokio/tethered" => {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("a tokio runtime");
            if name == "tokio/raw" {
                Box::new(move || {
                    let value = runtime
                        .block_on(async { tokio::task::spawn_blocking(|| black_box(1u64)).await });
                    black_box(value.expect("the job ran"));
                })
            } else {
                Box::new(move || {
                    let value = runtime.block_on(async {
                        tethered_tokio::spawn_native(|_| black_box(1u64)).await
                    });
                    black_box(value.expect("the job ran"));
                })
            }
        }
        "smol/raw" => Box::new(|| {
            let value = futures_lite::future::block_on(blocking::unblock(|| black_box(1u64)));
            black_box(value);
        }),
        "smol/tethered" => Box::new(|| {
            let value =
                futures_lite::future::block_on(tethered_smol::spawn_native(|_| black_box(1u64)));
            black_box(value.expect("the job ran"));
        }),
        "async_std/raw" => Box::new(|| {
            let value =
                async_std::task::block_on(async_std::task::spawn_blocking(|| black_box(1u64)));
            black_box(value);
        }),
        "async_std/tethered" => Box::new(|| {
            let value =
                async_std::task::block_on(tethered_async_std::spawn_native(|_| black_box(1u64)));
            black_box(value.expect("the job ran"));
        }),
        "thread/raw" => Box::new(|| {
            let value = std::thread::spawn(|| black_box(1u64)).join();
            black_box(value.expect("the job ran"));
        }),
        "thread/raw_named" => Box::new(|| {
            let value = std::thread::Builder::new()
                .name("named".to_owned())
                .spawn(|| black_box(1u64))
                .expect("a thread")
                .join();
            black_box(value.expect("the job ran"));
        }),
        "thread/tethered" => Box::new(|| {
            let value = AbortableNative::spawn(|_| black_box(1u64)).join_blocking();
            black_box(value.expect("the job ran"));
        }),
        "child/tokio_util" => {
            let parent = tokio_util::sync::CancellationToken::new();
            let mut kept = Vec::with_capacity(20_000);
            Box::new(move || kept.push(black_box(parent.child_token())))
        }
        "child/tethered" => {
            let parent = tethered::CancelSource::new();
            let mut kept = Vec::with_capacity(20_000);
            Box::new(move || kept.push(black_box(parent.child())))
        }
        other => panic!("no allocation case called {other:?}"),
    }
}

/// In a child process: counts one case and prints its counts as JSON on stdout.
fn run_case(name: &str, measure: bool) {
    let (warm_up, jobs) = if measure { (500, 5_000) } else { (2, 10) };
    let per_job = count(warm_up, jobs, job(name));
    eprintln!(
        "{name:<20} {:>6.2} allocations  {:>6.2} reallocations  {:>8.1} bytes per job",
        per_job.allocations, per_job.reallocations, per_job.bytes
    );
    println!(
        "{{\"jobs\": {jobs}, \"allocations\": {:.3}, \"reallocations\": {:.3}, \"bytes\": {:.1}}}",
        per_job.allocations, per_job.reallocations, per_job.bytes
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let invocation = Invocation::from_args();
    if let Some(at) = args.iter().position(|arg| arg == "--case") {
        let name = args.get(at + 1).expect("--case takes a case name");
        run_case(name, invocation.measure);
        return;
    }
    // One process per case: a runtime's threads and caches from an earlier case must not
    // allocate into a later one's count.
    let exe = std::env::current_exe().expect("the path of this benchmark");
    let mut fields = Vec::new();
    for name in CASES.iter().filter(|name| invocation.selects(name)) {
        let mut child = std::process::Command::new(&exe);
        child.args(["--case", name]);
        if invocation.measure {
            child.arg("--bench");
        }
        let output = child.output().expect("the case runs");
        eprint!("{}", String::from_utf8_lossy(&output.stderr));
        assert!(output.status.success(), "case {name} failed");
        let json = String::from_utf8(output.stdout).expect("JSON output");
        fields.push(format!("\"{name}\": {}", json.trim()));
    }
    if invocation.measure && invocation.filter.is_none() {
        write_results(
            "allocations",
            &format!("{{\"per_job\": {{{}}}}}\n", fields.join(", ")),
        );
    }
}
