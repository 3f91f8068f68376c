//! `NativeScope` and `JobOptions` on the real runtimes: tokio's blocking pool and smol's.
//!
//! Each behaviour is written once, generic over the runtime, and run on both.

use std::future::Future;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

use tethered::{CancelReason, JobOptions, NativeError, NativeScope, Spawner, Tethered};

/// What a behaviour needs of a runtime: its spawner and a way to block on a future.
trait Runtime {
    fn spawner(&self) -> impl Spawner + Send + Sync + 'static;
    fn block_on<F: Future>(&self, future: F) -> F::Output;
}

struct Tokio(tokio::runtime::Runtime);

impl Tokio {
    fn new() -> Self {
        Tokio(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap(),
        )
    }
}

impl Runtime for Tokio {
    fn spawner(&self) -> impl Spawner + Send + Sync + 'static {
        tethered_tokio::TokioSpawner::new(self.0.handle().clone())
    }
    fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.0.block_on(future)
    }
}

struct Smol;

impl Runtime for Smol {
    fn spawner(&self) -> impl Spawner + Send + Sync + 'static {
        tethered_smol::SmolSpawner::new()
    }
    fn block_on<F: Future>(&self, future: F) -> F::Output {
        smol::block_on(future)
    }
}

/// `stats()` is process-wide and some tests detach jobs: the tests of this file take turns.
fn serial() -> MutexGuard<'static, ()> {
    static SERIAL: Mutex<()> = Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// 50 jobs that poll their token: a shutdown cancels them all, and every closure has returned
/// when the report arrives, well within the grace.
fn shutdown_of_polling_jobs_is_clean(rt: impl Runtime) {
    let _serial = serial();
    let scope = NativeScope::with_spawner(rt.spawner());
    let started = Arc::new(AtomicUsize::new(0));
    let returned = Arc::new(AtomicUsize::new(0));
    for _ in 0..50 {
        let started = started.clone();
        let returned = returned.clone();
        scope
            .spawn(move |token| {
                started.fetch_add(1, Ordering::SeqCst);
                while !token.is_cancelled() {
                    std::thread::sleep(Duration::from_millis(1));
                }
                returned.fetch_add(1, Ordering::SeqCst);
            })
            .unwrap()
            .detach();
    }
    wait_until("some jobs started", || started.load(Ordering::SeqCst) > 0);
    let report = rt.block_on(scope.shutdown(Duration::from_secs(20)));
    assert!(report.is_clean(), "{report}");
    assert_eq!(report.cancelled, 50);
    assert_eq!(report.returned, 50);
    assert!(scope.is_empty());
    // Jobs that started have returned; the others were skipped, never run.
    assert_eq!(
        returned.load(Ordering::SeqCst),
        started.load(Ordering::SeqCst)
    );
    eprintln!("shutdown of 50 polling jobs: {report}");
}

#[test]
fn tokio_shutdown_of_polling_jobs_is_clean() {
    shutdown_of_polling_jobs_is_clean(Tokio::new());
}

#[test]
fn smol_shutdown_of_polling_jobs_is_clean() {
    shutdown_of_polling_jobs_is_clean(Smol);
}

/// A named job that ignores its token is reported by name as a straggler, counts as detached
/// until it returns, and the shutdown does not wait for it beyond the grace.
fn a_stuck_job_is_a_named_straggler(rt: impl Runtime) {
    let _serial = serial();
    let base = tethered::stats();
    let scope = NativeScope::with_spawner(rt.spawner());
    let (started_tx, started) = mpsc::channel();
    let (release_tx, release) = mpsc::channel::<()>();
    let options = JobOptions::new().name("stuck-sandbox").in_scope(&scope);
    tethered::spawn(options, move |_token| {
        started_tx.send(()).unwrap();
        release.recv().unwrap();
    })
    .unwrap()
    .detach();
    started.recv().unwrap();
    let report = rt.block_on(scope.shutdown(Duration::from_millis(100)));
    assert!(report.elapsed >= Duration::from_millis(100));
    assert_eq!(report.stragglers.len(), 1);
    assert_eq!(report.stragglers[0].name.as_deref(), Some("stuck-sandbox"));
    assert_eq!(tethered::stats().detached, base.detached + 1);
    assert_eq!(scope.len(), 1);
    release_tx.send(()).unwrap();
    rt.block_on(scope.wait_idle());
    wait_until("the straggler is no longer counted", || {
        tethered::stats().detached == base.detached
    });
    eprintln!("shutdown with a stuck job: {report}");
}

#[test]
fn tokio_a_stuck_job_is_a_named_straggler() {
    a_stuck_job_is_a_named_straggler(Tokio::new());
}

#[test]
fn smol_a_stuck_job_is_a_named_straggler() {
    a_stuck_job_is_a_named_straggler(Smol);
}

/// At most `max` closures of the scope run at once on the runtime's pool.
fn max_running_bounds_the_pool(rt: impl Runtime) {
    let _serial = serial();
    let scope =
        NativeScope::with_spawner(rt.spawner()).with_max_running(NonZeroUsize::new(3).unwrap());
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let jobs: Vec<_> = (0..12)
        .map(|i| {
            let running = running.clone();
            let peak = peak.clone();
            scope
                .spawn(move |_| {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(5));
                    running.fetch_sub(1, Ordering::SeqCst);
                    i
                })
                .unwrap()
        })
        .collect();
    let results = rt.block_on(async {
        let mut results = Vec::new();
        for job in jobs {
            results.push(job.await.unwrap());
        }
        results
    });
    assert_eq!(results, (0..12).collect::<Vec<_>>());
    assert!(peak.load(Ordering::SeqCst) <= 3);
}

#[test]
fn tokio_max_running_bounds_the_pool() {
    max_running_bounds_the_pool(Tokio::new());
}

#[test]
fn smol_max_running_bounds_the_pool() {
    max_running_bounds_the_pool(Smol);
}

/// An awaited job with a grace stops being waited for, visibly, when it ignores its cancel.
fn grace_on_the_runtime(rt: impl Runtime) {
    let _serial = serial();
    let base = tethered::stats();
    let (started_tx, started) = mpsc::channel();
    let (release_tx, release) = mpsc::channel::<()>();
    let options = JobOptions::new()
        .grace(Duration::from_millis(50))
        .on(rt.spawner());
    let job = tethered::spawn(options, move |_| {
        started_tx.send(()).unwrap();
        release.recv().unwrap();
    })
    .unwrap();
    started.recv().unwrap();
    job.cancel(CancelReason::Timeout);
    let err = rt.block_on(job).unwrap_err();
    assert!(matches!(
        err,
        NativeError::Abandoned {
            reason: CancelReason::Timeout,
            ..
        }
    ));
    assert_eq!(
        tethered::stats().detached,
        base.detached + 1,
        "abandoned, so counted as detached"
    );
    release_tx.send(()).unwrap();
    // Leave no detached job behind for the next test's counts.
    wait_until("the abandoned job returned", || {
        tethered::stats().detached == base.detached
    });
}

#[test]
fn tokio_grace_on_the_runtime() {
    grace_on_the_runtime(Tokio::new());
}

#[test]
fn smol_grace_on_the_runtime() {
    grace_on_the_runtime(Smol);
}

/// `cancel_all` and `wait_idle`; then dropping the scope cancels without blocking.
fn cancel_all_wait_idle_and_drop(rt: impl Runtime) {
    let _serial = serial();
    let scope = NativeScope::with_spawner(rt.spawner());
    let (started_tx, started) = mpsc::channel();
    for _ in 0..4 {
        let started_tx = started_tx.clone();
        scope
            .spawn(move |token| {
                started_tx.send(()).unwrap();
                token.wait()
            })
            .unwrap()
            .detach();
    }
    for _ in 0..4 {
        started.recv().unwrap();
    }
    scope.cancel_all(CancelReason::Requested);
    rt.block_on(scope.wait_idle());
    assert!(scope.is_empty());

    let (release_tx, release) = mpsc::channel::<()>();
    let stopped = Arc::new(AtomicBool::new(false));
    let flag = stopped.clone();
    let job = scope
        .spawn(move |token| {
            started_tx.send(()).unwrap();
            release.recv().unwrap();
            flag.store(true, Ordering::SeqCst);
            token.reason()
        })
        .unwrap();
    started.recv().unwrap();
    drop(scope); // must not wait for the job, which ignores its token
    assert!(!stopped.load(Ordering::SeqCst));
    release_tx.send(()).unwrap();
    // Cancelled while it ran: the stop, with what the closure returned (the reason it saw).
    let stopped = rt
        .block_on(job)
        .expect_err("the scope's drop cancelled the job");
    assert!(stopped.is_cancelled(), "{stopped:?}");
    assert_eq!(stopped.cancel_reason(), Some(CancelReason::Shutdown));
    assert_eq!(
        stopped.into_returned(),
        Some(Some(CancelReason::Shutdown)),
        "the scope's drop cancelled the job with Shutdown, and the closure saw it"
    );
}

#[test]
fn tokio_cancel_all_wait_idle_and_drop() {
    cancel_all_wait_idle_and_drop(Tokio::new());
}

#[test]
fn smol_cancel_all_wait_idle_and_drop() {
    cancel_all_wait_idle_and_drop(Smol);
}

/// The shutdown a server does: 500 jobs running on tokio's blocking pool, every closure polling
/// its token, plus one named job that ignores its token. Every polling closure returns promptly,
/// the report arrives at the grace's end, and the stuck job is its only straggler, by name.
#[test]
fn tokio_shutdown_of_500_running_jobs_and_a_stuck_one() {
    let _serial = serial();
    let rt = Tokio::new();
    let scope = NativeScope::with_spawner(rt.spawner());
    let running = Arc::new(AtomicUsize::new(0));
    let last_return = Arc::new(Mutex::new(None::<Instant>));
    for i in 0..500 {
        let running = running.clone();
        let last_return = last_return.clone();
        let options = JobOptions::new()
            .name(format!("poller-{i}"))
            .in_scope(&scope);
        tethered::spawn(options, move |token| {
            running.fetch_add(1, Ordering::SeqCst);
            while !token.is_cancelled() {
                std::thread::sleep(Duration::from_millis(1));
            }
            let now = Instant::now();
            let mut last = last_return.lock().unwrap();
            *last = Some(last.map_or(now, |last| last.max(now)));
        })
        .unwrap()
        .detach();
    }
    let (release_tx, release) = mpsc::channel::<()>();
    let (stuck_started_tx, stuck_started) = mpsc::channel::<()>();
    let options = JobOptions::new().name("stuck-sandbox-7").in_scope(&scope);
    tethered::spawn(options, move |_token| {
        stuck_started_tx.send(()).unwrap();
        release.recv().unwrap()
    })
    .unwrap()
    .detach();
    wait_until("all 500 pollers are running", || {
        running.load(Ordering::SeqCst) == 500
    });
    // Running, not still queued in the pool (a queued job would be skipped by the shutdown,
    // and no straggler).
    stuck_started
        .recv_timeout(Duration::from_secs(20))
        .expect("the stuck job starts");

    let shutdown_began = Instant::now();
    let report = rt.block_on(scope.shutdown(Duration::from_secs(2)));
    let last_return = last_return.lock().unwrap().expect("the pollers returned");
    let all_returned_after = last_return.duration_since(shutdown_began);
    assert!(
        all_returned_after < Duration::from_secs(1),
        "the last polling closure returned {all_returned_after:?} after the shutdown began"
    );
    assert_eq!(report.cancelled, 501);
    assert_eq!(report.returned, 500);
    assert_eq!(report.stragglers.len(), 1);
    assert_eq!(
        report.stragglers[0].name.as_deref(),
        Some("stuck-sandbox-7")
    );
    eprintln!(
        "500 polling jobs + 1 stuck on tokio: every polling closure returned within \
         {all_returned_after:?} of the shutdown; report: {report}"
    );
    release_tx.send(()).unwrap();
    rt.block_on(scope.wait_idle());
}
