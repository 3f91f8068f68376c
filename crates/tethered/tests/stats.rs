//! `stats()`: the process-wide counters that make a leak visible.
//!
//! The counters are process-wide, so the tests of this file (its own test binary) take turns.

mod support;

use std::sync::{Mutex, MutexGuard, mpsc};
use std::time::{Duration, Instant};

use std::num::NonZeroUsize;
use support::{ClosedSpawner, QueueSpawner, Stuck};
use tethered::{AbortableNative, CancelReason, JobOptions, NativeScope, Tethered, stats};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[test]
fn running_counts_closures_executing_now() {
    let _serial = serial();
    let base = stats();
    let (started_tx, started) = mpsc::channel();
    let jobs: Vec<_> = (0..3)
        .map(|_| {
            let started_tx = started_tx.clone();
            AbortableNative::spawn(move |token| {
                started_tx.send(()).unwrap();
                token.wait()
            })
        })
        .collect();
    for _ in 0..3 {
        started.recv().unwrap();
    }
    assert_eq!(stats().running, base.running + 3);
    assert_eq!(stats().spawned, base.spawned + 3);
    for job in jobs {
        job.cancel(CancelReason::Requested);
        assert!(job.join_blocking().unwrap_err().is_cancelled());
    }
    assert_eq!(stats().running, base.running);
    assert_eq!(stats().cancelled, base.cancelled + 3);
}

#[test]
fn an_external_job_counts_as_running_until_it_is_completed() {
    let _serial = serial();
    let base = stats();
    let (job, completer) = support::external::<u32>(JobOptions::new());
    assert_eq!(stats().running, base.running + 1);
    assert_eq!(stats().spawned, base.spawned + 1);
    completer.complete(7);
    assert_eq!(stats().running, base.running);
    assert_eq!(job.join_blocking().unwrap(), 7);
}

#[test]
fn a_dropped_job_counts_as_running_until_its_closure_returns() {
    let _serial = serial();
    let base = stats();
    let stuck = Stuck::new();
    let job = AbortableNative::spawn(stuck.job());
    stuck.wait_started();
    drop(job);
    assert_eq!(stats().running, base.running + 1, "the leak is visible");
    stuck.release();
    wait_until("the closure returned", || stats().running == base.running);
    wait_until("the job was counted as cancelled", || {
        stats().cancelled == base.cancelled + 1
    });
}

#[test]
fn detached_counts_until_the_job_finishes() {
    let _serial = serial();
    let base = stats();
    let (release_tx, release) = mpsc::channel::<()>();
    let job = AbortableNative::spawn(move |_| release.recv().unwrap());
    job.detach();
    assert_eq!(stats().detached, base.detached + 1);
    release_tx.send(()).unwrap();
    wait_until("the detached job finished", || {
        stats().detached == base.detached
    });
    assert_eq!(
        stats().cancelled,
        base.cancelled,
        "detaching does not cancel"
    );
}

#[test]
fn detaching_a_finished_job_counts_nothing() {
    let _serial = serial();
    let base = stats();
    let job = AbortableNative::spawn(|_| ());
    wait_until("the job finished", || job.is_finished());
    job.detach();
    assert_eq!(stats().detached, base.detached);
}

#[test]
fn panics_are_counted() {
    let _serial = serial();
    let base = stats();
    let job = AbortableNative::spawn(|_| -> () { panic!("counted") });
    assert!(job.join_blocking().unwrap_err().is_panic());
    assert_eq!(stats().panicked, base.panicked + 1);
    assert_eq!(stats().running, base.running);
}

#[test]
fn refused_spawns_are_not_counted_and_unrun_jobs_count_as_cancelled() {
    let _serial = serial();
    let base = stats();
    assert!(tethered::spawn(JobOptions::new().on(ClosedSpawner), |_| ()).is_err());
    assert_eq!(stats(), base);

    let spawner = QueueSpawner::default();
    let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |_| ()).unwrap();
    spawner.shut_down();
    assert!(job.join_blocking().is_err());
    let after = stats();
    assert_eq!(after.spawned, base.spawned + 1);
    assert_eq!(after.cancelled, base.cancelled + 1);
    assert_eq!(after.running, base.running);
}

#[test]
fn queued_counts_jobs_that_have_not_started() {
    let _serial = serial();
    let base = stats();
    let spawner = QueueSpawner::default();
    let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |_| ()).unwrap();
    assert_eq!(stats().queued, base.queued + 1);
    spawner.take().run();
    assert_eq!(stats().queued, base.queued);
    job.join_blocking().unwrap();
}

#[test]
fn shutdown_stragglers_count_as_detached_until_they_return() {
    let _serial = serial();
    let base = stats();
    let scope = NativeScope::new();
    let (started_tx, started) = mpsc::channel();
    let (release_tx, release) = mpsc::channel::<()>();
    scope
        .spawn(move |_| {
            started_tx.send(()).unwrap();
            release.recv().unwrap();
        })
        .unwrap()
        .detach();
    started.recv().unwrap();
    assert_eq!(
        stats().detached,
        base.detached,
        "a scope still tracks a job whose handle was let go"
    );
    let report = scope.shutdown_blocking(Duration::from_millis(20));
    assert_eq!(report.stragglers.len(), 1);
    assert_eq!(
        stats().detached,
        base.detached + 1,
        "left behind by the shutdown"
    );
    release_tx.send(()).unwrap();
    wait_until("the straggler returned", || {
        stats().detached == base.detached && stats().running == base.running
    });

    // A straggler whose handle is still held becomes detached through the report.
    let scope = NativeScope::new();
    let (started_tx, started) = mpsc::channel();
    let (release_tx, release) = mpsc::channel::<()>();
    let held = scope
        .spawn(move |_| {
            started_tx.send(()).unwrap();
            release.recv().unwrap();
        })
        .unwrap();
    started.recv().unwrap();
    let report = scope.shutdown_blocking(Duration::from_millis(20));
    assert_eq!(report.stragglers.len(), 1);
    assert_eq!(stats().detached, base.detached + 1);
    release_tx.send(()).unwrap();
    let stopped = held.join_blocking().unwrap_err();
    assert_eq!(stopped.cancel_reason(), Some(CancelReason::Shutdown));
    assert_eq!(stats().detached, base.detached);
}

#[test]
fn an_abandoned_job_counts_as_detached_until_it_returns() {
    let _serial = serial();
    let base = stats();
    let stuck = Stuck::new();
    let job = tethered::spawn(
        JobOptions::new()
            .grace(Duration::from_millis(10))
            .on(tethered::ThreadSpawner::new()),
        stuck.job(),
    )
    .unwrap();
    stuck.wait_started();
    job.cancel(CancelReason::Requested);
    assert!(job.join_blocking().unwrap_err().is_abandoned());
    assert_eq!(stats().detached, base.detached + 1);
    assert_eq!(stats().running, base.running + 1);
    stuck.release();
    wait_until("the abandoned job returned", || {
        stats().detached == base.detached && stats().running == base.running
    });
}

#[test]
fn job_registrations_on_a_shared_source_leave_with_the_jobs() {
    let _serial = serial();
    let shared = tethered::CancelSource::new();
    for _ in 0..100 {
        tethered::spawn(
            JobOptions::new()
                .grace(Duration::from_secs(60))
                .child_of(&shared.token())
                .on(tethered::ThreadSpawner::new()),
            |_| (),
        )
        .unwrap()
        .join_blocking()
        .unwrap();
    }
    assert_eq!(
        shared.token().registrations(),
        0,
        "finished jobs leave nothing registered on a source they shared"
    );

    let scope = NativeScope::new().with_max_running(NonZeroUsize::new(1).unwrap());
    let jobs: Vec<_> = (0..50)
        .map(|_| {
            tethered::spawn(
                JobOptions::new().child_of(&shared.token()).in_scope(&scope),
                |_| (),
            )
        })
        .collect::<Result<_, _>>()
        .unwrap();
    for job in jobs {
        job.join_blocking().unwrap();
    }
    assert_eq!(shared.token().registrations(), 0);
}
