//! Scenario 6: 10,000 jobs cancelled at random points (before start, mid-run, racing
//! completion), then no closure runs, every panic is accounted for, and the process is idle.
//!
//! Alone in its binary on purpose: `tethered::stats()` and the CPU time in `/proc/self/stat`
//! are process-wide, so another test running next to this one would disturb both.

mod common;

use std::panic;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{RUNTIME, runtime};
use tethered::{CancelToken, NativeError, Tethered};
use tethered_test_support::{
    Naive, Probe, XorShift, count_planned_panics, cpu_share_over, report, wait_until,
};

const JOBS: u64 = 10_000;
/// Jobs in flight at once. Each running closure is busy, so this is also how many threads
/// compete for the 2 cores of CI; more would measure the OS scheduler's queue, not the cancel.
const WAVE: u64 = 32;
/// One slice of a job's busy work; the closure checks its token between slices.
const SLICE: Duration = Duration::from_micros(10);
/// A "long" job runs until cancelled; this cap only keeps a broken run from spinning forever
/// (a long job that reaches it was never cancelled, which the test rejects).
const LONG_CAP_SLICES: u64 = 100_000;
/// Generous bound on the whole soak (a few seconds on a loaded 2-core machine).
const SOAK_BOUND: Duration = Duration::from_secs(120);
/// The window over which the idle process's CPU time is measured...
const IDLE_WINDOW: Duration = Duration::from_millis(500);
/// ...and the most it may use in it: 5% of one core.
const IDLE_CPU_SHARE: f64 = 0.05;
/// Naive jobs in the baseline: enough to burn far more than 5% of a core when leaked.
const NAIVE_JOBS: usize = 16;

/// The payload of the panics the soak plans; the hook counts them instead of printing them.
const PLANNED_PANIC: &str = "soak: a planned panic in a native job";

static STARTED: AtomicU64 = AtomicU64::new(0);
static RETURNED: AtomicU64 = AtomicU64::new(0);
static PANICS_RAISED: AtomicU64 = AtomicU64::new(0);
static PANICS_SEEN_BY_HOOK: AtomicU64 = AtomicU64::new(0);
static LONG_JOBS_UNCANCELLED: AtomicU64 = AtomicU64::new(0);
/// The probes of every closure that stopped because it was cancelled.
static CANCELLED_MID_RUN: Mutex<Vec<Probe>> = Mutex::new(Vec::new());

/// How much work a job has, in slices.
#[derive(Clone, Copy)]
enum Work {
    /// Finishes by itself, possibly before the cancel comes: races completion.
    Slices(u64),
    /// Runs until cancelled.
    Long,
}

/// When and how the caller gives up on the job.
#[derive(Clone, Copy, Debug)]
enum GiveUp {
    /// Drop the handle right after spawning: usually before the closure starts.
    DropAtOnce,
    /// Drop it after a few yields: races the closure's start.
    DropAfterYields(u64),
    /// Drop it once the closure runs, after a few more yields: mid-run.
    DropMidRun(u64),
    /// Lose a `select!` against a few yields: races completion.
    LoseSelect(u64),
    /// `tethered_tokio::timeout` with a deadline of this many microseconds.
    Timeout(u64),
    /// `cancel_and_join` once the closure runs.
    CancelAndJoin,
    /// Abort the task awaiting the job after a few yields.
    AbortTask(u64),
}

impl GiveUp {
    fn random(rng: &mut XorShift) -> Self {
        match rng.below(7) {
            0 => GiveUp::DropAtOnce,
            1 => GiveUp::DropAfterYields(rng.below(4)),
            2 => GiveUp::DropMidRun(rng.below(8)),
            3 => GiveUp::LoseSelect(rng.below(16)),
            4 => GiveUp::Timeout(rng.below(2_000)),
            5 => GiveUp::CancelAndJoin,
            _ => GiveUp::AbortTask(rng.below(8)),
        }
    }
}

/// What the awaiting side saw.
#[derive(Default)]
struct Outcomes {
    completed: AtomicUsize,
    cancelled: AtomicUsize,
    panicked: AtomicUsize,
    /// The caller dropped the handle (or its task) and never saw a result.
    dropped: AtomicUsize,
}

impl Outcomes {
    fn record(&self, result: Option<Result<(), NativeError<()>>>) {
        let counter = match result {
            Some(Ok(())) => &self.completed,
            Some(Err(NativeError::Panicked(_))) => &self.panicked,
            Some(Err(_)) => &self.cancelled,
            None => &self.dropped,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// Counts a closure's return, also when it unwinds.
struct ReturnCounter;

impl Drop for ReturnCounter {
    fn drop(&mut self) {
        RETURNED.fetch_add(1, Ordering::SeqCst);
    }
}

fn busy(duration: Duration) {
    let start = Instant::now();
    while start.elapsed() < duration {
        std::hint::spin_loop();
    }
}

/// The soak job's closure: `work` slices of busy work, checking the token between slices;
/// panics at slice `panic_at` if it gets there. The probe times the cancel (marked by the
/// awaiting side right before it drops, aborts or cancels; else seen by an `on_cancel`
/// callback, for cancels the test does not make itself, a timeout's timer firing).
fn job_body(
    token: CancelToken,
    work: Work,
    panic_at: Option<u64>,
    probe: Probe,
    started: Option<tokio::sync::oneshot::Sender<()>>,
) {
    STARTED.fetch_add(1, Ordering::SeqCst);
    let _returned = ReturnCounter;
    probe.run_tethered(&token, || {
        if let Some(started) = started {
            let _ = started.send(());
        }
        let slices = match work {
            Work::Slices(n) => n,
            Work::Long => LONG_CAP_SLICES,
        };
        for slice in 0..slices {
            if token.is_cancelled() {
                lock(&CANCELLED_MID_RUN).push(probe.clone());
                return;
            }
            if panic_at == Some(slice) {
                PANICS_RAISED.fetch_add(1, Ordering::SeqCst);
                panic::panic_any(PLANNED_PANIC);
            }
            busy(SLICE);
        }
        if matches!(work, Work::Long) {
            LONG_JOBS_UNCANCELLED.fetch_add(1, Ordering::SeqCst);
        }
    });
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

async fn yields(n: u64) {
    for _ in 0..n {
        tokio::task::yield_now().await;
    }
}

/// Spawns one job with a random plan and gives up on it at a random point.
async fn one_job(seed: u64, outcomes: Arc<Outcomes>) {
    let mut rng = XorShift::new(seed);
    let work = match rng.below(3) {
        0 => Work::Slices(rng.below(10)),
        1 => Work::Slices(10 + rng.below(40)),
        _ => Work::Long,
    };
    let panic_at = (rng.below(20) == 0).then(|| rng.below(20));
    let give_up = GiveUp::random(&mut rng);
    let probe = Probe::new();
    let wants_start = matches!(give_up, GiveUp::DropMidRun(_) | GiveUp::CancelAndJoin);
    let (started_tx, started) = tokio::sync::oneshot::channel();
    let started_tx = wants_start.then_some(started_tx);

    let mut job = tethered_tokio::spawn_native({
        let probe = probe.clone();
        move |token| job_body(token, work, panic_at, probe, started_tx)
    });
    let mark = || probe.mark_cancel(Instant::now());
    let result = match give_up {
        GiveUp::DropAtOnce => {
            mark();
            drop(job);
            None
        }
        GiveUp::DropAfterYields(n) => {
            yields(n).await;
            mark();
            drop(job);
            None
        }
        GiveUp::DropMidRun(n) => {
            // The closure may have panicked before signalling; then there is nothing to wait for.
            let _ = started.await;
            yields(n).await;
            mark();
            drop(job);
            None
        }
        GiveUp::LoseSelect(n) => {
            tokio::select! {
                result = &mut job => Some(result),
                () = yields(n) => {
                    mark();
                    drop(job);
                    None
                }
            }
        }
        GiveUp::Timeout(micros) => {
            // Not marked: the cancel happens when tokio's timer fires, and the callback in
            // the closure times it.
            Some(job.timeout(Duration::from_micros(micros)).await)
        }
        GiveUp::CancelAndJoin => {
            let _ = started.await;
            mark();
            Some(job.cancel_and_join().await)
        }
        GiveUp::AbortTask(n) => {
            let task = tokio::spawn(job);
            yields(n).await;
            mark();
            task.abort();
            task.await.ok()
        }
    };
    outcomes.record(result);
}

#[test]
fn soak_10_000_jobs_cancelled_at_random_points_leaves_nothing_running() {
    count_planned_panics(PLANNED_PANIC, &PANICS_SEEN_BY_HOOK);

    let runtime = runtime();
    let before = tethered::stats();
    let outcomes = Arc::new(Outcomes::default());
    let started_at = Instant::now();
    runtime.block_on({
        let outcomes = outcomes.clone();
        async move {
            let soak = async {
                let mut rng = XorShift::new(0x9E37_79B9_7F4A_7C15);
                let mut left = JOBS;
                while left > 0 {
                    let size = left.min(WAVE);
                    left -= size;
                    let mut wave = tokio::task::JoinSet::new();
                    for _ in 0..size {
                        wave.spawn(one_job(rng.next_u64() | 1, outcomes.clone()));
                    }
                    while let Some(done) = wave.join_next().await {
                        done.expect("a soak task failed");
                    }
                }
            };
            tokio::time::timeout(SOAK_BOUND, soak)
                .await
                .expect("the soak did not finish within its bound");
        }
    });
    let soak_took = started_at.elapsed();

    // Every closure returned and none is queued (cancelled closures finish their current
    // slice first, hence a wait).
    tethered::testing::assert_all_returned(Duration::from_secs(2));
    let after = tethered::stats();
    let idle_share = cpu_share_over(IDLE_WINDOW);
    let _ = panic::take_hook();

    let started = STARTED.load(Ordering::SeqCst);
    let raised = PANICS_RAISED.load(Ordering::SeqCst);
    let panicked_seen = outcomes.panicked.load(Ordering::SeqCst) as u64;
    eprintln!(
        "[{RUNTIME}] soak: {JOBS} jobs in {soak_took:?}: {started} closures ran, {} never \
         started; awaited results: {} completed, {} cancelled, {panicked_seen} panicked, {} \
         dropped unawaited; {raised} panics raised; stats delta: spawned {}, cancelled {}, panicked {}",
        JOBS - started,
        outcomes.completed.load(Ordering::SeqCst),
        outcomes.cancelled.load(Ordering::SeqCst),
        outcomes.dropped.load(Ordering::SeqCst),
        after.spawned - before.spawned,
        after.cancelled - before.cancelled,
        after.panicked - before.panicked,
    );

    assert_eq!(after.running, 0);
    assert_eq!(
        after.spawned - before.spawned,
        JOBS,
        "every spawn was accepted"
    );
    assert_eq!(
        RETURNED.load(Ordering::SeqCst),
        started,
        "every closure that ran returned"
    );
    assert_eq!(
        LONG_JOBS_UNCANCELLED.load(Ordering::SeqCst),
        0,
        "a job that only stops when cancelled ran to its cap"
    );
    assert!(
        raised > 0,
        "the plan raised no panic; the check below would be empty"
    );
    assert_eq!(
        after.panicked - before.panicked,
        raised,
        "stats count every panic"
    );
    assert_eq!(
        PANICS_SEEN_BY_HOOK.load(Ordering::SeqCst),
        raised,
        "the hook saw every panic"
    );
    assert!(
        panicked_seen <= raised,
        "an awaiter saw a panic that was never raised"
    );
    match idle_share {
        Some(share) => {
            eprintln!(
                "[{RUNTIME}] soak: CPU over the next {IDLE_WINDOW:?}: {:.1}% of one core",
                share * 100.0
            );
            assert!(
                share < IDLE_CPU_SHARE,
                "the process burned {:.1}% of a core after the soak",
                share * 100.0
            );
        }
        None => eprintln!("[{RUNTIME}] soak: no /proc/self/stat here; CPU check skipped"),
    }
    let times: Vec<Duration> = lock(&CANCELLED_MID_RUN)
        .iter()
        .map(Probe::cancel_to_return)
        .collect();
    report(RUNTIME, "soak (10,000 jobs)", times);

    naive_baseline_burns_cpu_until_released(&runtime);
}

/// The same kind of long jobs on plain `spawn_blocking`, given up at random points: every one
/// runs on, and the idle process burns CPU until the test sets the stop flag.
fn naive_baseline_burns_cpu_until_released(runtime: &tokio::runtime::Runtime) {
    let naive = Naive::new();
    runtime.block_on(async {
        let mut rng = XorShift::new(0xD1B5_4A32_D192_ED03);
        for _ in 0..NAIVE_JOBS {
            let mut task = tokio::task::spawn_blocking(naive.spinning_job());
            match rng.below(4) {
                0 => drop(task),
                1 => {
                    yields(rng.below(8)).await;
                    drop(task);
                }
                2 => {
                    let deadline = Duration::from_micros(rng.below(2_000));
                    assert!(tokio::time::timeout(deadline, task).await.is_err());
                }
                _ => {
                    tokio::select! {
                        _ = &mut task => panic!("a naive job cannot finish by itself"),
                        () = yields(rng.below(16)) => drop(task),
                    }
                }
            }
        }
    });
    let all_running = wait_until(Duration::from_secs(10), || naive.running() == NAIVE_JOBS);
    let share = cpu_share_over(IDLE_WINDOW);
    naive.stop();

    assert!(
        all_running,
        "the naive closures should all run although nobody awaits them"
    );
    if let Some(share) = share {
        eprintln!(
            "[{RUNTIME}] soak, naive baseline: {NAIVE_JOBS} abandoned spawn_blocking jobs \
             burned {:.1}% of one core over {IDLE_WINDOW:?}",
            share * 100.0
        );
        assert!(
            share >= IDLE_CPU_SHARE,
            "the naive baseline burned only {:.1}% of a core: no leak shown",
            share * 100.0
        );
    }
    naive.release();
}
