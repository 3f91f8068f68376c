//! `NativeScope` and `Builder`: grouping, limits, shutdown reports, names, abandon policy.

mod support;

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use futures_executor::block_on;
use std::num::NonZeroUsize;
use support::{QueueSpawner, Stuck};
use tethered::{
    AbortableNative, CancelReason, JobOptions, NativeError, NativeScope, SpawnError, Tethered,
    ThreadSpawner,
};

/// A job that reports its start, then waits for its token.
fn cooperative(scope: &NativeScope, started: &mpsc::Sender<()>) -> AbortableNative<CancelReason> {
    let started = started.clone();
    scope
        .spawn(move |token| {
            started.send(()).unwrap();
            token.wait()
        })
        .unwrap()
}

#[test]
fn len_counts_unfinished_jobs_and_wait_idle_resolves_when_none_are_left() {
    let scope = NativeScope::new();
    let (started_tx, started) = mpsc::channel();
    let jobs: Vec<_> = (0..3).map(|_| cooperative(&scope, &started_tx)).collect();
    for _ in 0..3 {
        started.recv().unwrap();
    }
    assert_eq!(scope.len(), 3);
    assert!(!scope.is_empty());
    for job in &jobs {
        job.cancel(CancelReason::Requested);
    }
    block_on(scope.wait_idle());
    assert!(scope.is_empty());
    for job in jobs {
        assert_eq!(
            job.join_blocking().unwrap_err().into_returned(),
            Some(CancelReason::Requested)
        );
    }
}

#[test]
fn wait_idle_on_an_empty_scope_is_ready() {
    block_on(NativeScope::new().wait_idle());
}

#[test]
fn cancel_all_cancels_every_job_and_keeps_the_scope_open() {
    let scope = NativeScope::new();
    let (started_tx, started) = mpsc::channel();
    let jobs: Vec<_> = (0..4).map(|_| cooperative(&scope, &started_tx)).collect();
    for _ in 0..4 {
        started.recv().unwrap();
    }
    scope.cancel_all(CancelReason::Failed);
    for job in jobs {
        let stopped = job.join_blocking().unwrap_err();
        assert_eq!(stopped.cancel_reason(), Some(CancelReason::Failed));
        assert_eq!(stopped.into_returned(), Some(CancelReason::Failed));
    }
    assert!(!scope.is_closed());
    assert_eq!(scope.spawn(|_| 5).unwrap().join_blocking().unwrap(), 5);
}

#[test]
fn shutdown_cancels_with_shutdown_waits_and_reports_every_job_returned() {
    let scope = NativeScope::new();
    let (started_tx, started) = mpsc::channel();
    let jobs: Vec<_> = (0..8).map(|_| cooperative(&scope, &started_tx)).collect();
    for _ in 0..8 {
        started.recv().unwrap();
    }
    let report = block_on(scope.shutdown(Duration::from_secs(30)));
    assert_eq!(report.cancelled, 8);
    assert_eq!(report.returned, 8);
    assert!(report.is_clean(), "{report}");
    assert!(report.elapsed < Duration::from_secs(30));
    assert!(scope.is_empty());
    for job in jobs {
        assert_eq!(
            job.join_blocking().unwrap_err().into_returned(),
            Some(CancelReason::Shutdown)
        );
    }
}

#[test]
fn shutdown_reports_a_stuck_job_by_name_after_the_grace() {
    let scope = NativeScope::new();
    let stuck = Stuck::new();
    let job = tethered::spawn(
        JobOptions::new().name("stuck-interpreter").in_scope(&scope),
        stuck.job(),
    )
    .unwrap();
    let stuck_token = job.token().clone();
    job.detach();
    let fine = scope.spawn(|token| token.wait()).unwrap();
    stuck.wait_started();

    let start = Instant::now();
    let report = scope.shutdown_blocking(Duration::from_millis(100));
    assert!(
        start.elapsed() >= Duration::from_millis(100),
        "waited the grace"
    );
    assert_eq!(report.cancelled, 2);
    assert_eq!(report.returned, 1);
    assert_eq!(report.stragglers.len(), 1);
    assert_eq!(
        report.stragglers[0].name.as_deref(),
        Some("stuck-interpreter")
    );
    assert!(
        report
            .to_string()
            .contains("1 still running, now detached: #")
    );
    assert!(report.to_string().contains("\"stuck-interpreter\""));
    assert_eq!(stuck_token.reason(), Some(CancelReason::Shutdown));
    assert_eq!(
        scope.len(),
        1,
        "the straggler is still counted until it returns"
    );
    match fine.join_blocking() {
        Ok(reason) => assert_eq!(reason, CancelReason::Shutdown),
        Err(err) => assert_eq!(err.cancel_reason(), Some(CancelReason::Shutdown)),
    }

    stuck.release();
    block_on(scope.wait_idle());
    assert!(scope.is_empty());
}

#[test]
fn async_shutdown_returns_at_the_deadline_with_a_stuck_job() {
    let scope = NativeScope::new();
    let stuck = Stuck::new();
    scope.spawn(stuck.job()).unwrap().detach();
    stuck.wait_started();
    let report = block_on(scope.shutdown(Duration::from_millis(50)));
    assert_eq!(report.stragglers.len(), 1);
    assert!(report.elapsed >= Duration::from_millis(50));
    stuck.release();
    block_on(scope.wait_idle());
}

#[test]
fn a_closed_scope_refuses_new_jobs_with_a_clear_error() {
    let scope = NativeScope::new();
    let report = scope.shutdown_blocking(Duration::from_secs(1));
    assert_eq!(report.cancelled, 0);
    assert!(scope.is_closed());
    let err = scope.spawn(|_| ()).unwrap_err();
    assert!(matches!(err, SpawnError::ScopeClosed));
    assert_eq!(
        err.to_string(),
        "the native scope is shut down and takes no new jobs"
    );
}

#[test]
fn dropping_the_scope_cancels_its_jobs_without_blocking() {
    let scope = NativeScope::new();
    let (started_tx, started) = mpsc::channel();
    let (release_tx, release) = mpsc::channel::<()>();
    let stuck = scope
        .spawn(move |token| {
            started_tx.send(()).unwrap();
            release.recv().unwrap();
            token.reason()
        })
        .unwrap();
    started.recv().unwrap();
    let token = stuck.token().clone();
    drop(scope); // returns although the job ignores its token
    assert_eq!(token.reason(), Some(CancelReason::Shutdown));
    release_tx.send(()).unwrap();
    assert_eq!(
        stuck.join_blocking().unwrap_err().into_returned(),
        Some(Some(CancelReason::Shutdown))
    );
}

#[test]
fn max_running_bounds_concurrency() {
    let scope = NativeScope::new().with_max_running(NonZeroUsize::new(2).unwrap());
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let jobs: Vec<_> = (0..8)
        .map(|i| {
            let running = running.clone();
            let peak = peak.clone();
            scope
                .spawn(move |_| {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    thread::sleep(Duration::from_millis(5));
                    running.fetch_sub(1, Ordering::SeqCst);
                    i
                })
                .unwrap()
        })
        .collect();
    let results: Vec<_> = jobs
        .into_iter()
        .map(|j| j.join_blocking().unwrap())
        .collect();
    assert_eq!(results, (0..8).collect::<Vec<_>>());
    assert!(
        peak.load(Ordering::SeqCst) <= 2,
        "peak {}",
        peak.load(Ordering::SeqCst)
    );
}

#[test]
fn a_cancelled_job_keeps_its_slot_until_its_closure_returns() {
    let scope = NativeScope::new().with_max_running(NonZeroUsize::new(1).unwrap());
    let stuck = Stuck::new();
    let slow = scope.spawn(stuck.job()).unwrap();
    stuck.wait_started();
    let next_started = Arc::new(AtomicBool::new(false));
    let flag = next_started.clone();
    let next = scope
        .spawn(move |_| flag.store(true, Ordering::SeqCst))
        .unwrap();
    slow.cancel(CancelReason::Requested);
    thread::sleep(Duration::from_millis(50));
    assert!(
        !next_started.load(Ordering::SeqCst),
        "the slot was freed before the cancelled closure returned"
    );
    stuck.release();
    next.join_blocking().unwrap();
    assert!(next_started.load(Ordering::SeqCst));
    assert!(slow.join_blocking().unwrap_err().returned().is_some());
}

#[test]
fn a_waiting_job_cancelled_resolves_at_once_without_running() {
    let scope = NativeScope::new().with_max_running(NonZeroUsize::new(1).unwrap());
    let stuck = Stuck::new();
    let blocker = scope.spawn(stuck.job()).unwrap();
    stuck.wait_started();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let waiting = scope
        .spawn(move |_| flag.store(true, Ordering::SeqCst))
        .unwrap();
    assert_eq!(scope.len(), 2);
    waiting.cancel(CancelReason::Timeout);
    // The slot is still held by the blocker, yet the cancelled job resolves.
    assert!(matches!(
        waiting.join_blocking(),
        Err(NativeError::Cancelled {
            reason: CancelReason::Timeout,
            ..
        })
    ));
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(scope.len(), 1);
    stuck.release();
    blocker.join_blocking().unwrap();
}

#[test]
fn a_scope_on_a_custom_spawner_reports_jobs_its_pool_dropped() {
    let spawner = QueueSpawner::default();
    let scope = NativeScope::with_spawner(spawner.clone());
    let job = scope.spawn(|_| 1).unwrap();
    assert_eq!(scope.len(), 1);
    spawner.shut_down();
    assert!(matches!(
        job.join_blocking(),
        Err(NativeError::Cancelled {
            reason: CancelReason::Shutdown,
            ..
        })
    ));
    assert!(scope.is_empty());
}

#[test]
fn job_names_reach_the_thread_debug_and_the_task() {
    let job = tethered::spawn(
        JobOptions::new()
            .name("sandbox-42")
            .on(ThreadSpawner::new().name("pool")),
        |_| thread::current().name().map(str::to_owned),
    )
    .unwrap();
    assert_eq!(job.name(), Some("sandbox-42"));
    assert!(format!("{job:?}").contains("name: \"sandbox-42\""));
    assert_eq!(job.join_blocking().unwrap().as_deref(), Some("sandbox-42"));

    let spawner = QueueSpawner::default();
    let job =
        tethered::spawn(JobOptions::new().name("queued").on(spawner.clone()), |_| ()).unwrap();
    let task = spawner.take();
    assert_eq!(task.name(), Some("queued"));
    assert!(format!("{task:?}").contains("queued"));
    task.run();
    job.join_blocking().unwrap();
}

#[test]
fn abandon_after_gives_up_waiting_on_a_stuck_cancelled_job_visibly() {
    let stuck = Stuck::new();
    let job = tethered::spawn(
        JobOptions::new()
            .name("stuck")
            .grace(Duration::from_millis(30))
            .on(tethered::ThreadSpawner::new()),
        stuck.job(),
    )
    .unwrap();
    stuck.wait_started();
    let cancelled_at = Instant::now();
    job.cancel(CancelReason::Timeout);
    let err = block_on(job).unwrap_err();
    assert!(cancelled_at.elapsed() >= Duration::from_millis(30));
    assert!(err.is_abandoned());
    assert_eq!(err.cancel_reason(), Some(CancelReason::Timeout));
    assert!(
        err.to_string()
            .starts_with("native job abandoned: cancelled (the deadline passed) and still running")
    );
    stuck.release();
}

#[test]
fn abandon_after_does_not_cut_short_a_job_that_returns_in_time() {
    let (started_tx, started) = mpsc::channel();
    let job = tethered::spawn(
        JobOptions::new()
            .grace(Duration::from_secs(30))
            .on(tethered::ThreadSpawner::new()),
        move |token| {
            started_tx.send(()).unwrap();
            token.wait();
            thread::sleep(Duration::from_millis(20));
            "clean"
        },
    )
    .unwrap();
    started.recv().unwrap();
    let stopped = block_on(job.cancel_and_join()).unwrap_err();
    assert_eq!(stopped.into_returned(), Some("clean"));
}

#[test]
fn without_an_abandon_policy_an_awaited_job_waits_for_its_closure() {
    let (started_tx, started) = mpsc::channel();
    let returned = Arc::new(AtomicBool::new(false));
    let flag = returned.clone();
    let job = AbortableNative::spawn(move |_token| {
        started_tx.send(()).unwrap();
        thread::sleep(Duration::from_millis(100)); // ignores its token for a while
        flag.store(true, Ordering::SeqCst);
    });
    started.recv().unwrap();
    job.cancel(CancelReason::Timeout);
    let stopped = job.join_blocking().unwrap_err();
    assert!(stopped.is_cancelled() && stopped.returned().is_some());
    assert!(returned.load(Ordering::SeqCst));
}

#[test]
fn child_of_ties_a_job_to_an_outer_token() {
    let request = tethered::CancelSource::new();
    let (started_tx, started) = mpsc::channel();
    let job = tethered::spawn(
        JobOptions::new()
            .child_of(&request.token())
            .on(tethered::ThreadSpawner::new()),
        move |token| {
            started_tx.send(()).unwrap();
            token.wait()
        },
    )
    .unwrap();
    started.recv().unwrap();
    request.cancel(CancelReason::Failed);
    assert_eq!(
        job.join_blocking().unwrap_err().into_returned(),
        Some(CancelReason::Failed)
    );
}

#[test]
fn a_shutdown_future_moved_to_another_task_still_ends_at_the_deadline() {
    let scope = NativeScope::new();
    let stuck = Stuck::new();
    scope.spawn(stuck.job()).unwrap().detach();
    stuck.wait_started();
    let mut shutdown = Box::pin(scope.shutdown(Duration::from_millis(50)));
    // Polled once with one waker (which is then gone), then awaited by another task.
    assert!(
        shutdown
            .as_mut()
            .poll(&mut std::task::Context::from_waker(std::task::Waker::noop()))
            .is_pending()
    );
    let report = thread::spawn(move || block_on(shutdown)).join().unwrap();
    assert_eq!(report.stragglers.len(), 1);
    stuck.release();
    block_on(scope.wait_idle());
}

/// A waker whose drop uses the scope: it would deadlock if dropped under the scope's lock.
struct ReentrantWaker(Arc<NativeScope>);

impl std::task::Wake for ReentrantWaker {
    fn wake(self: Arc<Self>) {}
}

impl Drop for ReentrantWaker {
    fn drop(&mut self) {
        let _ = self.0.len();
    }
}

#[test]
fn a_replaced_waker_is_dropped_outside_the_scopes_lock() {
    let scope = Arc::new(NativeScope::new());
    let (release_tx, release) = mpsc::channel::<()>();
    scope
        .spawn(move |_| release.recv().unwrap())
        .unwrap()
        .detach();
    let mut idle = Box::pin(scope.wait_idle());
    for _ in 0..2 {
        // Each poll replaces the previous waker, whose drop takes the scope's lock.
        let waker = std::task::Waker::from(Arc::new(ReentrantWaker(scope.clone())));
        assert!(
            idle.as_mut()
                .poll(&mut std::task::Context::from_waker(&waker))
                .is_pending()
        );
    }
    release_tx.send(()).unwrap();
    block_on(idle);
}

#[test]
fn cancel_all_finishes_jobs_still_queued_in_the_pool_at_once() {
    let spawner = QueueSpawner::default();
    let scope = NativeScope::with_spawner(spawner.clone());
    let job = scope.spawn(|_| 1).unwrap();
    scope.cancel_all(CancelReason::Shutdown);
    assert!(job.is_finished());
    assert!(scope.is_empty());
    assert!(matches!(
        job.join_blocking(),
        Err(NativeError::Cancelled {
            reason: CancelReason::Shutdown,
            ..
        })
    ));
    spawner.take().run(); // the pool's late run does nothing
    assert!(scope.is_empty());
}

#[test]
fn a_closed_scope_does_not_cancel_the_source_it_was_offered() {
    let scope = NativeScope::new();
    scope.shutdown_blocking(Duration::ZERO);
    let request = tethered::CancelSource::new();
    let refused = tethered::spawn(
        JobOptions::new()
            .child_of(&request.token())
            .in_scope(&scope),
        |_| (),
    );
    assert!(matches!(refused, Err(SpawnError::ScopeClosed)));
    assert!(!request.is_cancelled());
}

#[test]
fn a_scopes_stats_count_its_own_jobs_only() {
    let ours = NativeScope::new();
    let theirs = NativeScope::new();
    let stuck = Stuck::new();
    let elsewhere = theirs.spawn(stuck.job()).unwrap();
    stuck.wait_started();
    for i in 0..10 {
        assert_eq!(ours.spawn(move |_| i).unwrap().join_blocking().unwrap(), i);
    }
    let cancelled = ours.spawn(|token| token.wait()).unwrap();
    cancelled.cancel(CancelReason::Requested);
    let _ = cancelled.join_blocking(); // returned or skipped: counted as cancelled either way
    tethered::testing::assert_scope_returned(&ours, Duration::from_secs(10));
    let mine = ours.stats();
    assert_eq!((mine.spawned, mine.cancelled, mine.running), (11, 1, 0));
    assert_eq!(
        theirs.stats().running,
        1,
        "the other scope's stuck job is not ours"
    );
    stuck.release();
    elsewhere.join_blocking().unwrap();
    assert_eq!(theirs.stats().running, 0);
}

#[test]
fn cancel_all_cancels_the_jobs_of_now_and_not_the_jobs_spawned_after() {
    let scope = NativeScope::new();
    let before: Vec<_> = (0..50)
        .map(|_| scope.spawn(|token| token.wait()).unwrap())
        .collect();
    scope.cancel_all(CancelReason::Failed);
    let after = scope.spawn(|token| token.is_cancelled()).unwrap();
    assert!(
        !after.join_blocking().unwrap(),
        "a later job starts uncancelled"
    );
    for job in before {
        match job.join_blocking() {
            Ok(reason) => assert_eq!(reason, CancelReason::Failed),
            Err(err) => assert_eq!(err.cancel_reason(), Some(CancelReason::Failed)),
        }
    }
}

#[test]
fn a_scope_child_of_an_outer_token_cancels_its_jobs_now_and_later() {
    let server = tethered::CancelSource::new();
    let scope = NativeScope::new()
        .with_max_running(NonZeroUsize::new(1).unwrap())
        .child_of(&server.token());
    let running = scope.spawn(|token| token.wait()).unwrap();
    let waiting = scope
        .spawn(|_| unreachable!("waited for a slot, then was cancelled"))
        .unwrap();
    server.cancel(CancelReason::Shutdown);
    assert!(matches!(
        waiting.join_blocking(),
        Err(NativeError::Cancelled {
            reason: CancelReason::Shutdown,
            ..
        })
    ));
    match running.join_blocking() {
        Ok(reason) => assert_eq!(reason, CancelReason::Shutdown),
        Err(err) => assert_eq!(err.cancel_reason(), Some(CancelReason::Shutdown)),
    }
    let late = scope
        .spawn(|_| unreachable!("the outer token is cancelled"))
        .unwrap();
    assert!(late.join_blocking().unwrap_err().is_cancelled());
    assert!(!scope.is_closed(), "the scope stays open");
    // Cancelling the scope never touches the outer token.
    let other = tethered::CancelSource::new();
    let inner = NativeScope::new().child_of(&other.token());
    inner.cancel_all(CancelReason::Requested);
    drop(inner);
    assert!(!other.is_cancelled());
    assert_eq!(
        other.token().registrations(),
        0,
        "a dropped scope unlinks itself"
    );
}
