//! Comparison 1: the cost of one cancellation check in a hot loop.
//!
//! `CancelToken::is_cancelled()` against a bare `AtomicBool::load(Acquire)` (the floor) and
//! `tokio_util::sync::CancellationToken::is_cancelled()` (which takes a mutex). Each iteration
//! runs a batch of [`BATCH`] checks, so criterion's own per-iteration cost disappears; the
//! report divides by the batch.
//!
//! `contended/*` repeats the three with two more threads running: a second poller hammering the
//! same flag, and a writer that keeps registering and dropping `on_cancel` callbacks on the
//! same token (for tokio-util, creating and dropping child tokens, which take the lock its
//! `is_cancelled` takes; for the `AtomicBool`, the same writer works on an unrelated token, so
//! the machine carries the same load).
//!
//! Run with: cargo bench -p benchmarks --bench check

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use criterion::{Criterion, Throughput};
use tethered::{CancelSource, CancelToken};
use tokio_util::sync::CancellationToken;

/// Checks per measured iteration.
const BATCH: u64 = 1_000;

/// Something whose cancellation can be checked.
trait Check: Clone + Send + Sync + 'static {
    fn check(&self) -> bool;
}

impl Check for Arc<AtomicBool> {
    #[inline]
    fn check(&self) -> bool {
        self.load(Ordering::Acquire)
    }
}

impl Check for CancelToken {
    #[inline]
    fn check(&self) -> bool {
        self.is_cancelled()
    }
}

impl Check for CancellationToken {
    #[inline]
    fn check(&self) -> bool {
        self.is_cancelled()
    }
}

/// One measured iteration: `BATCH` checks whose results the optimiser must keep.
#[inline]
fn hot_loop<C: Check>(flag: &C) {
    for _ in 0..BATCH {
        black_box(black_box(flag).check());
    }
}

/// Two background threads: a second poller of `flag`, and `writer` in a loop; both stop
/// when the returned `Load` is dropped.
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Load {
    fn start<C: Check>(flag: C, writer: impl Fn() + Send + 'static) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let poller = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    hot_loop(&flag);
                }
            })
        };
        let writer = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    for _ in 0..100 {
                        writer();
                    }
                }
            })
        };
        Load {
            stop,
            threads: vec![poller, writer],
        }
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for thread in self.threads.drain(..) {
            thread.join().expect("a load thread panicked");
        }
    }
}

/// Registers and drops one `on_cancel` callback on `token`.
fn register_and_drop(token: &CancelToken) {
    let guard = token.on_cancel(|reason| {
        black_box(reason);
    });
    drop(black_box(guard));
}

fn uncontended(c: &mut Criterion) {
    let mut group = c.benchmark_group("check");
    group.throughput(Throughput::Elements(BATCH));

    let atomic = Arc::new(AtomicBool::new(false));
    group.bench_function("atomic_bool", |b| b.iter(|| hot_loop(&atomic)));

    let source = CancelSource::new();
    let token = source.token();
    group.bench_function("tethered", |b| b.iter(|| hot_loop(&token)));

    let tokio_token = CancellationToken::new();
    group.bench_function("tokio_util", |b| b.iter(|| hot_loop(&tokio_token)));
    group.finish();
}

fn contended(c: &mut Criterion) {
    let mut group = c.benchmark_group("check_contended");
    group.throughput(Throughput::Elements(BATCH));

    {
        let atomic = Arc::new(AtomicBool::new(false));
        let unrelated = CancelSource::new().token();
        let _load = Load::start(atomic.clone(), move || register_and_drop(&unrelated));
        group.bench_function("atomic_bool", |b| b.iter(|| hot_loop(&atomic)));
    }
    {
        let source = CancelSource::new();
        let token = source.token();
        let writer_token = token.clone();
        let _load = Load::start(token.clone(), move || register_and_drop(&writer_token));
        group.bench_function("tethered", |b| b.iter(|| hot_loop(&token)));
    }
    {
        let tokio_token = CancellationToken::new();
        let writer_token = tokio_token.clone();
        let _load = Load::start(tokio_token.clone(), move || {
            drop(black_box(writer_token.child_token()));
        });
        group.bench_function("tokio_util", |b| b.iter(|| hot_loop(&tokio_token)));
    }
    group.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

fn main() {
    let mut criterion = config().configure_from_args();
    uncontended(&mut criterion);
    contended(&mut criterion);
    criterion.final_summary();
}
