//! Comparison 6: `NativeScope::cancel_all` over n jobs waiting for a slot, per job, for
//! n = 1,000 and n = 20,000. A cancelled waiting job leaves the queue by key, so the cost per
//! job stays flat instead of growing with n (a queue scanned per cancel would make it O(n²)).
//!
//! One job holds the scope's only slot in a pool that never runs it; the other n wait. Only
//! the cancel is timed; building the scope and dropping what is left are setup and teardown.
//!
//! Run with: cargo bench -p benchmarks --bench scope

use std::hint::black_box;
use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput};
use tethered::{CancelReason, NativeScope, Runnable, SpawnError, Spawner};

/// Keeps every runnable it is given and never runs it: the slot stays taken.
#[derive(Clone, Default)]
struct Parked(Arc<Mutex<Vec<Runnable>>>);

impl Spawner for Parked {
    fn spawn(&self, runnable: Runnable) -> Result<(), SpawnError> {
        self.0.lock().unwrap().push(runnable);
        Ok(())
    }
}

fn waiting_jobs(n: usize) -> (NativeScope, Vec<tethered::AbortableNative<()>>, Parked) {
    let pool = Parked::default();
    let scope = NativeScope::with_spawner(pool.clone()).with_max_running(NonZeroUsize::MIN);
    let jobs = (0..=n).map(|_| scope.spawn(|_| ()).unwrap()).collect();
    (scope, jobs, pool)
}

fn cancel_all(c: &mut Criterion) {
    let mut group = c.benchmark_group("cancel_all");
    for n in [1_000usize, 20_000] {
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(format!("waiting_{n}"), |b| {
            b.iter_batched(
                || waiting_jobs(n),
                |(scope, jobs, pool)| {
                    scope.cancel_all(CancelReason::Shutdown);
                    black_box((scope, jobs, pool))
                },
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

fn main() {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20)
        .configure_from_args();
    cancel_all(&mut criterion);
    criterion.final_summary();
}
