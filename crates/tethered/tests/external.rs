//! A job whose work runs elsewhere and reports through a `Completer`: tethered, counted,
//! cancelled and read like a spawned job.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use std::num::NonZeroUsize;
use tethered::{CancelReason, CancelSource, JobOptions, NativeError, Tethered};

mod support;

/// (That it counts as running until then is in `stats.rs`, whose tests take turns with the
/// process-wide counters; here other tests' jobs finish meanwhile.)
#[test]
fn a_completed_external_job_gives_its_value() {
    let (job, completer) = support::external::<u32>(JobOptions::new().name("remote"));
    assert_eq!(job.name(), Some("remote"));
    assert!(!job.is_finished());
    completer.complete(7);
    assert!(job.is_finished());
    assert_eq!(job.join_blocking().unwrap(), 7);
}

#[test]
fn a_cancel_reaches_the_work_through_the_completers_token_and_reads_as_a_stop() {
    let (job, completer) = support::external::<&str>(JobOptions::new());
    let (started_tx, started) = mpsc::channel();
    let worker = thread::spawn(move || {
        started_tx.send(()).unwrap();
        let reason = completer.token().wait();
        assert!(completer.is_cancelled());
        completer.complete("partial");
        reason
    });
    started.recv().unwrap();
    assert!(job.cancel(CancelReason::Timeout));
    let stopped = job.join_blocking().unwrap_err();
    assert!(matches!(
        stopped,
        NativeError::Cancelled {
            reason: CancelReason::Timeout,
            ..
        }
    ));
    assert_eq!(stopped.into_returned(), Some("partial"));
    assert_eq!(worker.join().unwrap(), CancelReason::Timeout);
}

#[test]
fn dropping_the_handle_cancels_the_external_work_with_dropped() {
    let (job, completer) = support::external::<()>(JobOptions::new());
    drop(job);
    assert_eq!(completer.token().reason(), Some(CancelReason::Dropped));
    completer.complete(()); // nobody takes it: dropped quietly
}

#[test]
fn a_completer_dropped_unfinished_stops_the_job_with_shutdown() {
    let (job, completer) = support::external::<u8>(JobOptions::new());
    let token = job.token().clone();
    drop(completer);
    let err = job.join_blocking().unwrap_err();
    assert!(matches!(
        err,
        NativeError::Cancelled {
            reason: CancelReason::Shutdown,
            returned: None,
            ..
        }
    ));
    assert_eq!(token.reason(), Some(CancelReason::Shutdown));
}

#[test]
fn a_completer_dropped_after_a_cancel_stops_the_job_with_that_cancels_reason() {
    let parent = CancelSource::new();
    let (job, completer) = support::external::<u8>(JobOptions::new().child_of(&parent.token()));
    parent.cancel_with_cause(CancelReason::Dropped, tethered::Cause::msg("client gone"));
    drop(completer);
    let err = job.join_blocking().unwrap_err();
    assert_eq!(err.cancel_reason(), Some(CancelReason::Dropped));
    assert_eq!(err.cause().unwrap().to_string(), "client gone");
}

#[test]
fn an_external_job_abandons_after_its_grace_like_a_spawned_one() {
    let (job, completer) =
        support::external::<()>(JobOptions::new().grace(Duration::from_millis(10)));
    job.cancel(CancelReason::Timeout);
    let err = job.join_blocking().unwrap_err();
    assert!(matches!(
        err,
        NativeError::Abandoned {
            reason: CancelReason::Timeout,
            ..
        }
    ));
    completer.complete(());
}

#[test]
fn an_external_job_is_a_tethered_handle_for_cancel_when() {
    let (job, completer) = support::external::<u8>(JobOptions::new());
    let token = job.token().clone();
    let raced = job.cancel_when(std::future::ready(()), CancelReason::Shutdown);
    let err = futures_executor::block_on(raced).unwrap_err();
    // The work has not reported yet: the race stopped waiting.
    assert!(err.is_abandoned());
    assert_eq!(token.reason(), Some(CancelReason::Shutdown));
    completer.complete(1);
}

#[test]
fn an_external_job_completed_by_another_thread_wakes_its_awaiting_task() {
    for _ in 0..200 {
        let (job, completer) = support::external::<u32>(JobOptions::new());
        let worker = thread::spawn(move || completer.complete(11));
        assert_eq!(futures_executor::block_on(job).unwrap(), 11);
        worker.join().unwrap();
    }
}

#[test]
fn in_a_scope_an_external_job_holds_its_slot_until_completed_and_a_waiting_one_starts_later() {
    let scope = tethered::NativeScope::new().with_max_running(NonZeroUsize::new(2).unwrap());
    let (started_tx, started) = mpsc::channel::<(usize, tethered::Completer<usize>)>();
    let jobs: Vec<_> = (0..5)
        .map(|i| {
            let started_tx = started_tx.clone();
            tethered::spawn_external(JobOptions::new().in_scope(&scope), move |completer| {
                started_tx.send((i, completer)).unwrap();
            })
            .unwrap()
        })
        .collect();
    // Two slots: the first two started on this thread, at once; three wait, unstarted.
    let mut live: Vec<_> = started.try_iter().collect();
    assert_eq!(live.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [0, 1]);
    let counts = scope.stats();
    assert_eq!((counts.running, counts.queued), (2, 3));
    // Each completion frees a slot; the next waiting job starts on the scope's spawner.
    let mut begun = 2;
    while let Some((i, completer)) = (!live.is_empty()).then(|| live.remove(0)) {
        completer.complete(i * 10);
        if begun < 5 {
            let next = started.recv_timeout(Duration::from_secs(10)).unwrap();
            assert_eq!(next.0, begun);
            live.push(next);
            begun += 1;
        }
        assert!(scope.stats().running <= 2);
    }
    let results: Vec<_> = jobs
        .into_iter()
        .map(|job| job.join_blocking().unwrap())
        .collect();
    assert_eq!(results, [0, 10, 20, 30, 40]);
    assert_eq!(scope.len(), 0);
}

#[test]
fn a_waiting_external_job_that_is_cancelled_never_starts_and_leaves_its_queue() {
    let scope = tethered::NativeScope::new().with_max_running(NonZeroUsize::new(1).unwrap());
    let (keep_tx, keep) = mpsc::channel();
    let first = tethered::spawn_external(
        JobOptions::new().in_scope(&scope),
        move |completer: tethered::Completer<()>| keep_tx.send(completer).unwrap(),
    )
    .unwrap();
    let (ran_tx, ran) = mpsc::channel::<()>();
    let waiting = tethered::spawn_external(
        JobOptions::new().in_scope(&scope),
        move |completer: tethered::Completer<()>| {
            ran_tx.send(()).unwrap();
            completer.complete(());
        },
    )
    .unwrap();
    assert_eq!(scope.stats().queued, 1);
    assert!(waiting.cancel(CancelReason::Timeout));
    let stopped = waiting.join_blocking().unwrap_err();
    assert!(matches!(
        stopped,
        NativeError::Cancelled {
            reason: CancelReason::Timeout,
            returned: None,
            ..
        }
    ));
    assert_eq!(scope.len(), 1);
    keep.recv().unwrap().complete(());
    first.join_blocking().unwrap();
    // Its start was dropped, never called, also once the slot freed.
    assert!(ran.recv_timeout(Duration::from_millis(200)).is_err());
    assert_eq!(scope.len(), 0);
}

#[test]
fn a_panicking_start_stops_its_job_and_frees_the_slot() {
    let scope = tethered::NativeScope::new().with_max_running(NonZeroUsize::new(1).unwrap());
    let broken = tethered::spawn_external(
        JobOptions::new().in_scope(&scope),
        |_completer: tethered::Completer<u8>| panic!("the start failed"),
    )
    .unwrap();
    let stopped = broken.join_blocking().unwrap_err();
    assert_eq!(stopped.cancel_reason(), Some(CancelReason::Shutdown));
    let next = tethered::spawn_external(JobOptions::new().in_scope(&scope), |completer| {
        completer.complete(5u8)
    })
    .unwrap();
    assert_eq!(next.join_blocking().unwrap(), 5);
}

#[test]
fn a_closed_scope_refuses_an_external_job_and_never_starts_it() {
    let scope = tethered::NativeScope::new();
    scope.shutdown_blocking(Duration::from_secs(1));
    let refused = tethered::spawn_external(
        JobOptions::new().in_scope(&scope),
        |_completer: tethered::Completer<()>| unreachable!("a closed scope starts nothing"),
    )
    .unwrap_err();
    assert!(matches!(refused, tethered::SpawnError::ScopeClosed));
}

#[test]
fn a_scope_whose_outer_token_is_cancelled_never_starts_an_external_job() {
    let server = CancelSource::new();
    let scope = tethered::NativeScope::new().child_of(&server.token());
    server.cancel(CancelReason::Shutdown);
    let job = tethered::spawn_external(
        JobOptions::new().in_scope(&scope),
        |_completer: tethered::Completer<()>| {
            unreachable!("its token was cancelled before the start")
        },
    )
    .unwrap();
    let stopped = job.join_blocking().unwrap_err();
    assert_eq!(stopped.cancel_reason(), Some(CancelReason::Shutdown));
}

/// Work that finished, its result not yet published (a child that exited, not yet reaped):
/// with a finished check, a cancel then changes nothing, by the handle, by a parent's walk, as
/// after a closure returned; before the finish, a cancel stops it as always.
#[test]
fn a_cancel_after_the_work_finished_unreported_changes_nothing() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    // The handle's own cancel.
    let (job, completer) = support::external::<&str>(JobOptions::new());
    let finished = Arc::new(AtomicBool::new(false));
    let seen = finished.clone();
    completer.finished_check(move || seen.load(Ordering::Acquire));
    finished.store(true, Ordering::Release);
    assert!(
        !job.cancel(CancelReason::Requested),
        "the work had finished"
    );
    assert!(!job.token().is_cancelled());
    completer.complete("done");
    assert_eq!(job.join_blocking().unwrap(), "done");

    // A parent's cancel reaching it on its walk.
    let parent = CancelSource::new();
    let (job, completer) = support::external::<&str>(JobOptions::new().child_of(&parent.token()));
    completer.finished_check(|| true);
    assert!(parent.cancel(CancelReason::Shutdown));
    assert!(!job.token().is_cancelled());
    completer.complete("done");
    assert_eq!(job.join_blocking().unwrap(), "done");

    // Before the finish, a cancel stops it; the check is then dropped (it may hold a
    // descriptor), and asked no more.
    let (job, completer) = support::external::<&str>(JobOptions::new());
    let held = Arc::new(());
    let in_check = held.clone();
    completer.finished_check(move || {
        let _ = &in_check;
        false
    });
    assert_eq!(Arc::strong_count(&held), 2);
    assert!(job.cancel(CancelReason::Requested));
    assert_eq!(
        Arc::strong_count(&held),
        1,
        "the check went with the decision"
    );
    completer.complete("partial");
    let stopped = job.join_blocking().unwrap_err();
    assert_eq!(stopped.cancel_reason(), Some(CancelReason::Requested));
    assert_eq!(stopped.into_returned(), Some("partial"));
}

/// A check that panics reads as "not finished": the cancel goes on, and nothing escapes.
#[test]
fn a_finished_check_that_panics_lets_the_cancel_stop_the_work() {
    let (job, completer) = support::external::<u32>(JobOptions::new());
    completer.finished_check(|| panic!("a check that panics"));
    assert!(job.cancel(CancelReason::Timeout));
    drop(completer);
    assert_eq!(
        job.join_blocking().unwrap_err().cancel_reason(),
        Some(CancelReason::Timeout)
    );
}

/// A job cancelled before it begins (a zero timeout, a deadline past, a cancelled parent)
/// never starts its work: `start` is dropped uncalled, as a closure never runs.
#[test]
fn an_external_job_cancelled_before_it_begins_never_calls_start() {
    let parent = CancelSource::new();
    parent.cancel(CancelReason::Shutdown);
    let cases = [
        (
            JobOptions::new().timeout(Duration::ZERO),
            CancelReason::Timeout,
        ),
        (
            JobOptions::new().deadline(std::time::Instant::now() - Duration::from_secs(1)),
            CancelReason::Timeout,
        ),
        (
            JobOptions::new().child_of(&parent.token()),
            CancelReason::Shutdown,
        ),
    ];
    for (options, reason) in cases {
        let job = tethered::spawn_external(options, |_completer: tethered::Completer<u32>| {
            unreachable!("a job cancelled before it began never starts")
        })
        .unwrap();
        match job.join_blocking() {
            Err(NativeError::Cancelled {
                reason: seen,
                returned: None,
                ..
            }) => assert_eq!(seen, reason),
            other => panic!("{reason:?}: {other:?}"),
        }
    }
}

/// `Completer::run` runs the work as a spawned closure runs: the thread carries the job's
/// name while it runs (the OS's name, which `top -H` reads), and gets its own back.
#[cfg(target_os = "linux")]
#[test]
fn completer_run_names_the_thread_after_the_job_while_the_work_runs() {
    fn os_name() -> String {
        std::fs::read_to_string("/proc/thread-self/comm")
            .unwrap()
            .trim_end()
            .to_owned()
    }
    let (job, completer) = support::external::<String>(JobOptions::new().name("render-9"));
    let worker = thread::Builder::new()
        .name("my-pool-3".into())
        .spawn(move || {
            let inside = completer.run(os_name).unwrap();
            let after = os_name();
            completer.complete(inside);
            after
        })
        .unwrap();
    assert_eq!(job.join_blocking().unwrap(), "render-9");
    assert_eq!(worker.join().unwrap(), "my-pool-3");
}
