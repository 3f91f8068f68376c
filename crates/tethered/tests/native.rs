//! `AbortableNative`: results, cancel before start, drop-cancellation, joins, detach.

mod support;

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use futures_executor::block_on;
use support::{ClosedSpawner, FailingSpawner, InlineSpawner, QueueSpawner};
use tethered::{
    AbortableNative, CancelReason, CancelSource, JobOptions, NativeError, OnSpawner, SpawnError,
    Tethered, ThreadSpawner,
};

fn assert_send_sync_unpin<T: Send + Sync + Unpin + 'static>(_: &T) {}

/// Spawns a job that spins until cancelled and reports that it started.
fn spinning_job() -> (AbortableNative<CancelReason>, mpsc::Receiver<()>) {
    let (started_tx, started) = mpsc::channel();
    let job = AbortableNative::spawn(move |token| {
        started_tx.send(()).unwrap();
        while !token.is_cancelled() {
            std::hint::spin_loop();
        }
        token.reason().unwrap()
    });
    (job, started)
}

#[test]
fn handle_is_send_sync_unpin() {
    let job = AbortableNative::spawn(|_| 1);
    assert_send_sync_unpin(&job);
    assert_eq!(job.join_blocking().unwrap(), 1);
}

#[test]
fn awaiting_returns_the_closures_value() {
    let job = AbortableNative::spawn(|_| String::from("result"));
    assert_eq!(block_on(job).unwrap(), "result");
}

#[test]
fn closure_gets_a_token_of_the_job() {
    let (tx, rx) = mpsc::channel();
    let job = AbortableNative::spawn(move |token| {
        tx.send(token).unwrap();
    });
    let inner = rx.recv().unwrap();
    assert!(inner.same_as(job.token()));
    job.join_blocking().unwrap();
}

#[test]
fn dropping_the_handle_cancels_a_running_job_with_dropped() {
    let (job, started) = spinning_job();
    let token = job.token().clone();
    started.recv().unwrap();
    drop(job);
    assert_eq!(token.reason(), Some(CancelReason::Dropped));
}

#[test]
fn dropping_the_awaiting_future_mid_await_cancels_the_job() {
    let (job, started) = spinning_job();
    let token = job.token().clone();
    started.recv().unwrap();
    let mut job = Box::pin(job);
    assert!(
        job.as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
            .is_pending()
    );
    drop(job);
    assert_eq!(
        token.wait_timeout(Duration::from_secs(10)),
        Some(CancelReason::Dropped)
    );
}

#[test]
fn a_job_cancelled_while_it_runs_reads_as_stopped_with_what_its_closure_returned() {
    let (job, started) = spinning_job();
    started.recv().unwrap();
    job.cancel(CancelReason::Timeout);
    match job.join_blocking() {
        Err(NativeError::Cancelled {
            reason: CancelReason::Timeout,
            returned: Some(seen),
            ..
        }) => assert_eq!(*seen, CancelReason::Timeout),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_cancel_from_a_parent_reads_the_same_as_one_from_the_handle() {
    for by_parent in [false, true] {
        let parent = CancelSource::new();
        let (started_tx, started) = mpsc::channel();
        let job = tethered::spawn(
            JobOptions::new()
                .child_of(&parent.token())
                .on(ThreadSpawner::new()),
            move |token| {
                started_tx.send(()).unwrap();
                token.wait();
                "partial"
            },
        )
        .unwrap();
        started.recv().unwrap();
        if by_parent {
            parent.cancel(CancelReason::Shutdown);
        } else {
            job.cancel(CancelReason::Shutdown);
        }
        let stopped = job.join_blocking().unwrap_err();
        assert_eq!(stopped.cancel_reason(), Some(CancelReason::Shutdown));
        assert_eq!(stopped.into_returned(), Some("partial"));
    }
}

#[test]
fn cancel_returns_true_only_once() {
    let (job, started) = spinning_job();
    started.recv().unwrap();
    assert!(job.cancel(CancelReason::Requested));
    assert!(!job.cancel(CancelReason::Timeout));
    let stopped = block_on(job).unwrap_err();
    assert_eq!(stopped.cancel_reason(), Some(CancelReason::Requested));
    assert_eq!(stopped.into_returned(), Some(CancelReason::Requested));
}

#[test]
fn cancel_before_start_never_runs_the_closure() {
    let spawner = QueueSpawner::default();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let job = tethered::spawn(JobOptions::new().on(spawner.clone()), move |_| {
        flag.store(true, Ordering::SeqCst)
    })
    .unwrap();
    job.cancel(CancelReason::Timeout);
    spawner.take().run();
    assert!(!ran.load(Ordering::SeqCst));
    assert!(matches!(
        job.join_blocking(),
        Err(NativeError::Cancelled {
            reason: CancelReason::Timeout,
            ..
        })
    ));
}

#[test]
fn dropping_the_handle_before_start_skips_the_closure_and_drops_it() {
    let spawner = QueueSpawner::default();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let captured = Arc::new(());
    let held = captured.clone();
    let job = tethered::spawn(JobOptions::new().on(spawner.clone()), move |_| {
        let _held = &held;
        flag.store(true, Ordering::SeqCst);
    })
    .unwrap();
    let token = job.token().clone();
    drop(job);
    assert_eq!(token.reason(), Some(CancelReason::Dropped));
    spawner.take().run();
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(
        Arc::strong_count(&captured),
        1,
        "the skipped closure was dropped"
    );
}

#[test]
fn a_task_dropped_unrun_by_its_pool_reports_shutdown() {
    let spawner = QueueSpawner::default();
    let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |_| 1).unwrap();
    let token = job.token().clone();
    spawner.shut_down();
    assert!(job.is_finished());
    assert!(matches!(
        block_on(job),
        Err(NativeError::Cancelled {
            reason: CancelReason::Shutdown,
            ..
        })
    ));
    assert_eq!(token.reason(), Some(CancelReason::Shutdown));
}

#[test]
fn a_spawner_that_drops_the_task_while_spawning_is_a_spawn_error() {
    let err = tethered::spawn(JobOptions::new().on(ClosedSpawner), |_| 1).unwrap_err();
    assert!(matches!(err, SpawnError::Rejected));
    assert!(
        err.to_string()
            .contains("dropped the job without running it")
    );
}

#[test]
fn a_spawner_error_is_returned_with_its_cause() {
    let err = tethered::spawn(JobOptions::new().on(FailingSpawner), |_| 1).unwrap_err();
    assert_eq!(err.to_string(), "the spawner failed");
    assert_eq!(
        std::error::Error::source(&err).unwrap().to_string(),
        "no capacity left",
        "the cause is the source, not repeated in the message"
    );
    assert_eq!(
        tethered::__private::error_chain(&err),
        "the spawner failed: no capacity left"
    );
}

#[test]
fn a_spawner_that_runs_inline_delivers_the_result() {
    let job = tethered::spawn(JobOptions::new().on(InlineSpawner), |_| 5).unwrap();
    assert!(job.is_finished());
    assert_eq!(block_on(job).unwrap(), 5);
}

#[test]
fn a_panicking_closure_is_an_error_with_its_payload_not_a_panic_in_the_awaiter() {
    let job = AbortableNative::spawn(|_| -> u8 { std::panic::panic_any(17_u32) });
    let err = block_on(job).unwrap_err();
    assert!(err.is_panic());
    assert_eq!(err.to_string(), "native job panicked");
    assert_eq!(
        std::error::Error::source(&err).unwrap().to_string(),
        "a panic whose payload is not a string"
    );
    assert_eq!(err.into_panic().downcast_ref::<u32>(), Some(&17));

    let job = AbortableNative::spawn(|_| -> u8 { panic!("formatted {}", 42) });
    match job.join_blocking() {
        Err(NativeError::Panicked(panic)) => assert_eq!(panic.message(), Some("formatted 42")),
        other => panic!("expected a panic, got {other:?}"),
    }
}

#[test]
fn native_error_accessors_and_messages() {
    let err: NativeError<u32> = NativeError::from(tethered::Cancelled::new(CancelReason::Timeout));
    assert!(err.is_cancelled());
    assert_eq!(err.cancel_reason(), Some(CancelReason::Timeout));
    assert_eq!(err.returned(), None);
    assert_eq!(err.to_string(), "native job cancelled: the deadline passed");
    let err = err.try_into_panic().unwrap_err();
    assert!(!err.is_panic());

    let err = cancelled_after_returning(7u32);
    assert_eq!(err.returned(), Some(&7));
    assert_eq!(
        err.to_string(),
        "native job cancelled: cancellation was requested (its closure returned a value after the cancel)"
    );
    // Debug names what came back, not the value: an error for any `T`.
    assert_eq!(
        format!("{err:?}"),
        r#"Cancelled { reason: Requested, cause: None, returned: Some("u32") }"#
    );
    assert_eq!(err.map_returned(|n| n * 2).into_returned(), Some(14));
    let boxed: Box<dyn std::error::Error + Send + Sync> =
        cancelled_after_returning(std::cell::Cell::new(1))
            .without_returned()
            .into();
    assert!(boxed.to_string().starts_with("native job cancelled"));
}

/// The error of a job cancelled while its closure ran, which then returned `value`.
fn cancelled_after_returning<T: Send + 'static>(value: T) -> NativeError<T> {
    let (started_tx, started) = mpsc::channel();
    let job = AbortableNative::spawn(move |token| {
        started_tx.send(()).unwrap();
        token.wait();
        value
    });
    started.recv().unwrap();
    assert!(job.cancel(CancelReason::Requested));
    match job.join_blocking() {
        Err(err) => err,
        Ok(_) => panic!("the cancel came while the closure ran"),
    }
}

#[test]
fn is_finished_turns_true_once_the_closure_returned() {
    let (release_tx, release) = mpsc::channel::<()>();
    let job = AbortableNative::spawn(move |_| release.recv().unwrap());
    assert!(!job.is_finished());
    release_tx.send(()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !job.is_finished() {
        assert!(Instant::now() < deadline, "the job never finished");
        thread::sleep(Duration::from_millis(1));
    }
    job.join_blocking().unwrap();
}

#[test]
fn cancel_and_join_resolves_only_after_the_closure_returned() {
    let returned = Arc::new(AtomicBool::new(false));
    let flag = returned.clone();
    let (started_tx, started) = mpsc::channel();
    let job = AbortableNative::spawn(move |token| {
        started_tx.send(()).unwrap();
        let reason = token.wait();
        thread::sleep(Duration::from_millis(50)); // slow clean-up after the cancel
        flag.store(true, Ordering::SeqCst);
        reason
    });
    started.recv().unwrap();
    let stopped = block_on(job.cancel_and_join()).unwrap_err();
    assert_eq!(stopped.into_returned(), Some(CancelReason::Requested));
    assert!(returned.load(Ordering::SeqCst));
}

#[test]
fn cancel_and_join_of_a_queued_job_resolves_without_running_it() {
    let spawner = QueueSpawner::default();
    let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |_| 1).unwrap();
    let joined = thread::spawn(move || block_on(job.cancel_and_join()));
    thread::sleep(Duration::from_millis(10));
    spawner.take().run();
    assert!(matches!(
        joined.join().unwrap(),
        Err(NativeError::Cancelled {
            reason: CancelReason::Requested,
            ..
        })
    ));
}

#[test]
fn the_handle_wakes_its_task_when_the_job_finishes() {
    let spawner = QueueSpawner::default();
    let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |_| 3).unwrap();
    let mut job = pin!(job);
    let woken = Arc::new(WakeFlag::default());
    let waker = Waker::from(woken.clone());
    assert!(
        job.as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_pending()
    );
    spawner.take().run();
    assert!(woken.0.load(Ordering::SeqCst));
    assert!(matches!(
        job.as_mut().poll(&mut Context::from_waker(&waker)),
        Poll::Ready(Ok(3))
    ));
}

#[derive(Default)]
struct WakeFlag(AtomicBool);

impl std::task::Wake for WakeFlag {
    fn wake(self: Arc<Self>) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn detach_lets_the_job_run_on_uncancelled() {
    let (release_tx, release) = mpsc::channel::<()>();
    let (done_tx, done) = mpsc::channel();
    let job = AbortableNative::spawn(move |token| {
        release.recv().unwrap();
        done_tx.send(token.is_cancelled()).unwrap();
    });
    let token = job.token().clone();
    job.detach();
    assert!(!token.is_cancelled());
    release_tx.send(()).unwrap();
    assert!(
        !done.recv().unwrap(),
        "the detached job ran to the end uncancelled"
    );
}

#[test]
fn child_of_ties_the_job_to_an_outer_token() {
    let request = CancelSource::new();
    let (started_tx, started) = mpsc::channel();
    let job = tethered::spawn(
        JobOptions::new()
            .child_of(&request.token())
            .on(ThreadSpawner::new()),
        move |token| {
            started_tx.send(()).unwrap();
            token.wait()
        },
    )
    .unwrap();
    started.recv().unwrap();
    request.cancel(CancelReason::Shutdown);
    let stopped = job.join_blocking().unwrap_err();
    assert_eq!(stopped.into_returned(), Some(CancelReason::Shutdown));
    assert_eq!(request.token().registrations(), 0);
}

#[test]
fn thread_spawner_names_its_threads() {
    let job = AbortableNative::spawn(|_| thread::current().name().map(str::to_owned));
    assert_eq!(
        job.join_blocking().unwrap().as_deref(),
        Some(ThreadSpawner::DEFAULT_THREAD_NAME)
    );
    let job = tethered::spawn(
        JobOptions::new().on(ThreadSpawner::new().name("interp-7")),
        |_| thread::current().name().map(str::to_owned),
    )
    .unwrap();
    assert_eq!(job.join_blocking().unwrap().as_deref(), Some("interp-7"));
}

#[test]
fn thread_spawner_reuses_a_finished_jobs_thread_but_not_one_named_after_its_job() {
    // A spawner name of this test's own: no other test's job can take its idle threads.
    let spawner = ThreadSpawner::new().name("reuse-probe");
    let thread_of = |options: JobOptions<OnSpawner>| {
        tethered::spawn(options, |_| thread::current().id())
            .unwrap()
            .join_blocking()
            .unwrap()
    };
    // A finished job's thread waits for the next job: one of the next ones runs on a thread
    // seen before (each try gives the first thread a moment more to start waiting).
    let mut seen = vec![thread_of(JobOptions::new().on(spawner.clone()))];
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        thread::sleep(Duration::from_millis(10));
        let id = thread_of(JobOptions::new().on(spawner.clone()));
        if seen.contains(&id) {
            break;
        }
        assert!(Instant::now() < until, "no thread was reused in 20 s");
        seen.push(id);
    }
    // A thread named after its job is not kept: every such job gets a new one.
    let named: Vec<_> = (0..5)
        .map(|_| {
            thread::sleep(Duration::from_millis(10));
            thread_of(JobOptions::new().name("named-probe").on(spawner.clone()))
        })
        .collect();
    for (i, id) in named.iter().enumerate() {
        assert!(
            !named[..i].contains(id),
            "a job-named thread ran a second job"
        );
    }
}

#[test]
fn thread_spawner_reports_an_os_refusal_as_a_spawn_error() {
    // A stack larger than any address space: the OS refuses the thread.
    let err = tethered::spawn(
        JobOptions::new().on(ThreadSpawner::new().stack_size(usize::MAX)),
        |_| 1,
    )
    .unwrap_err();
    assert!(matches!(err, SpawnError::Thread(_)), "{err:?}");
    assert!(
        err.to_string()
            .starts_with("the operating system refused to start a thread")
    );
}

#[test]
fn cancel_when_returns_the_result_if_the_job_wins() {
    let job = AbortableNative::spawn(|_| 9);
    let result = block_on(job.cancel_when(std::future::pending::<()>(), CancelReason::Timeout));
    assert_eq!(result.unwrap(), 9);
}

#[test]
fn cancel_when_cancels_with_its_reason_and_does_not_wait_for_the_closure() {
    let (release_tx, release) = mpsc::channel::<()>();
    let job = AbortableNative::spawn(move |token| {
        // Ignores the token until released: the race must not wait for it.
        release.recv().unwrap();
        token.reason()
    });
    let token = job.token().clone();
    let result = block_on(job.cancel_when(std::future::ready(()), CancelReason::Timeout));
    // Running: the race stopped waiting (`Abandoned`); not started: dropped unrun (`Cancelled`
    // with nothing returned). Never a wait for the closure, which is still blocked.
    assert!(matches!(
        result,
        Err(NativeError::Abandoned {
            reason: CancelReason::Timeout,
            ..
        } | NativeError::Cancelled {
            reason: CancelReason::Timeout,
            returned: None,
            ..
        })
    ));
    assert_eq!(token.reason(), Some(CancelReason::Timeout));
    // If the closure had not started, it was dropped unrun, and the channel with it.
    let _ = release_tx.send(());
}

#[test]
fn debug_output_shows_state() {
    let spawner = QueueSpawner::default();
    let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |_| ()).unwrap();
    assert_eq!(
        format!("{job:?}"),
        format!(
            "AbortableNative {{ id: {:?}, finished: false, cancelled: false }}",
            job.id()
        )
    );
    assert_eq!(spawner.len(), 1);
    spawner.take().run();
    job.join_blocking().unwrap();
}

#[test]
fn a_job_cancelled_before_spawn_never_reaches_the_spawner() {
    let spawner = QueueSpawner::default();
    let source = CancelSource::new();
    source.cancel(CancelReason::Timeout);
    let job = tethered::spawn(
        JobOptions::new()
            .child_of(&source.token())
            .on(spawner.clone()),
        |_| 1,
    )
    .unwrap();
    assert_eq!(spawner.len(), 0, "no pool slot is spent on a cancelled job");
    assert!(matches!(
        job.join_blocking(),
        Err(NativeError::Cancelled {
            reason: CancelReason::Timeout,
            ..
        })
    ));
}

/// Drops every task while spawning, and names that refusal.
struct ShutDownPool;

impl tethered::Spawner for ShutDownPool {
    fn spawn(&self, task: tethered::Runnable) -> Result<(), SpawnError> {
        drop(task);
        Ok(())
    }

    fn refused(&self) -> SpawnError {
        SpawnError::shutdown("test pool")
    }
}

#[test]
fn a_spawner_can_name_its_refusal() {
    let err = tethered::spawn(JobOptions::new().on(ShutDownPool), |_| 1).unwrap_err();
    assert!(matches!(
        err,
        SpawnError::Shutdown {
            runtime: "test pool"
        }
    ));
    let scope = tethered::NativeScope::with_spawner(ShutDownPool);
    assert!(matches!(
        scope.spawn(|_| 1).unwrap_err(),
        SpawnError::Shutdown {
            runtime: "test pool"
        }
    ));
}

#[test]
fn cancelling_a_job_still_queued_in_a_pool_finishes_it_at_once() {
    let spawner = QueueSpawner::default();
    let captured = Arc::new(());
    let held = captured.clone();
    let job = tethered::spawn(JobOptions::new().on(spawner.clone()), move |_| {
        let _held = &held;
        unreachable!("cancelled while queued: never runs")
    })
    .unwrap();
    assert!(job.cancel(CancelReason::Timeout));
    assert!(job.is_finished(), "no thread needs to reach it first");
    assert_eq!(
        Arc::strong_count(&captured),
        1,
        "its closure was dropped unrun"
    );
    assert!(matches!(
        block_on(job.cancel_and_join()),
        Err(NativeError::Cancelled {
            reason: CancelReason::Timeout,
            ..
        })
    ));
    // When a pool thread finally gets to the task, there is nothing left to do.
    spawner.take().run();
}

#[test]
fn dropping_the_handle_of_a_queued_job_frees_its_closure_at_once() {
    let spawner = QueueSpawner::default();
    let captured = Arc::new(());
    let held = captured.clone();
    let job = tethered::spawn(JobOptions::new().on(spawner.clone()), move |_| {
        let _held = &held;
    })
    .unwrap();
    drop(job);
    assert_eq!(Arc::strong_count(&captured), 1);
    drop(spawner.take()); // the pool shutting down later changes nothing either
}

#[test]
fn cancel_leaves_a_finished_job_alone() {
    let source = CancelSource::new();
    let job = tethered::spawn(
        JobOptions::new()
            .child_of(&source.token())
            .on(InlineSpawner),
        |_| 1,
    )
    .unwrap();
    assert!(job.is_finished());
    assert!(!job.cancel(CancelReason::Requested), "nothing to cancel");
    assert!(!source.is_cancelled(), "the shared source is left alone");
    assert_eq!(job.join_blocking().unwrap(), 1);
}

#[test]
fn a_refused_spawn_does_not_cancel_the_callers_source() {
    let source = CancelSource::new();
    let err = tethered::spawn(
        JobOptions::new()
            .child_of(&source.token())
            .on(ClosedSpawner),
        |_| 1,
    );
    assert!(err.is_err());
    let err = tethered::spawn(
        JobOptions::new()
            .child_of(&source.token())
            .on(FailingSpawner),
        |_| 1,
    );
    assert!(err.is_err());
    assert!(
        !source.is_cancelled(),
        "the caller's source is still the caller's"
    );
}

#[test]
fn cancel_when_reports_an_earlier_cancels_reason() {
    let (started_tx, started) = mpsc::channel();
    let job = AbortableNative::spawn(move |token| {
        started_tx.send(()).unwrap();
        token.wait()
    });
    started.recv().unwrap();
    let token = job.token().clone();
    assert!(job.cancel(CancelReason::Failed));
    // The earlier cancel stands; the race reports it instead of its own reason.
    let result = block_on(job.cancel_when(std::future::ready(()), CancelReason::Timeout));
    match result {
        // The closure may already have returned the reason it saw.
        Ok(reason) => assert_eq!(reason, CancelReason::Failed),
        Err(err) => assert_eq!(err.cancel_reason(), Some(CancelReason::Failed)),
    }
    assert_eq!(token.reason(), Some(CancelReason::Failed));
}

#[test]
fn a_queued_job_cancelled_through_an_outer_token_finishes_at_once() {
    let spawner = QueueSpawner::default();
    let request = CancelSource::new();
    let captured = Arc::new(());
    let held = captured.clone();
    let job = tethered::spawn(
        JobOptions::new()
            .child_of(&request.token())
            .on(spawner.clone()),
        move |_| {
            let _held = &held;
            unreachable!("cancelled while queued: never runs")
        },
    )
    .unwrap();
    request.cancel(CancelReason::Failed);
    assert!(job.is_finished(), "no pool thread needs to reach it first");
    assert_eq!(
        Arc::strong_count(&captured),
        1,
        "its closure was dropped unrun"
    );
    assert!(matches!(
        job.join_blocking(),
        Err(NativeError::Cancelled {
            reason: CancelReason::Failed,
            ..
        })
    ));
    spawner.take().run(); // the pool's late run does nothing
    assert_eq!(request.token().registrations(), 0);
}

#[test]
fn a_job_with_its_own_source_registers_no_callback() {
    // Its cancels come through its handle, which finishes a queued job itself: a plain job
    // pays for no registration (an allocation and a lock), whatever the features.
    let spawner = QueueSpawner::default();
    let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |_| ()).unwrap();
    let expected = usize::from(cfg!(feature = "tracing"));
    assert_eq!(job.token().registrations(), expected);
    // One given a source from outside listens for cancels that bypass its handle.
    let job2 = tethered::spawn(
        JobOptions::new()
            .child_of(&CancelSource::new().token())
            .on(spawner.clone()),
        |_| (),
    )
    .unwrap();
    assert_eq!(job2.token().registrations(), 1);
    spawner.take().run();
    spawner.take().run();
    job.join_blocking().unwrap();
    job2.join_blocking().unwrap();
}

#[test]
fn a_spawner_that_refuses_but_keeps_the_task_never_runs_the_closure() {
    let spawner = support::KeepingFailingSpawner::default();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let err = tethered::spawn(JobOptions::new().on(spawner.clone()), move |_| {
        flag.store(true, Ordering::SeqCst)
    })
    .unwrap_err();
    assert!(
        tethered::__private::error_chain(&err).contains("refused, but kept the task"),
        "{err}"
    );
    // The spawner runs what it kept anyway: the job was finished at the refusal.
    spawner.take().run();
    assert!(!ran.load(Ordering::SeqCst));

    let scope = tethered::NativeScope::with_spawner(spawner.clone());
    let flag = ran.clone();
    assert!(
        scope
            .spawn(move |_| flag.store(true, Ordering::SeqCst))
            .is_err()
    );
    spawner.take().run();
    assert!(!ran.load(Ordering::SeqCst));
    assert!(scope.is_empty(), "a refused job leaves its scope");
}

#[test]
fn or_cancelled_turns_a_shutdown_refusal_into_a_stopped_handle() {
    let base = tethered::stats();
    let job = tethered::__private::spawned_or_stopped(tethered::spawn(
        JobOptions::new().on(ClosedSpawner),
        |_| unreachable!("refused"),
    ));
    assert!(job.is_finished());
    assert!(matches!(
        job.join_blocking(),
        Err(NativeError::Cancelled {
            reason: CancelReason::Shutdown,
            returned: None,
            ..
        })
    ));
    assert!(tethered::stats().cancelled > base.cancelled);
}

#[test]
fn or_cancelled_panics_on_a_refusal_that_is_not_a_shutdown() {
    let panic = std::panic::catch_unwind(|| {
        tethered::__private::spawned_or_stopped(tethered::spawn(
            JobOptions::new().on(FailingSpawner),
            |_| (),
        ))
    })
    .unwrap_err();
    let message = panic
        .downcast_ref::<String>()
        .expect("a panic with a message");
    assert!(message.contains("no capacity left"), "{message}");
}

#[test]
fn a_timeout_on_a_borrowed_handle_stops_waiting_and_keeps_the_handle_for_the_stop() {
    let (mut job, started) = spinning_job();
    started.recv().unwrap();
    let waited = block_on((&mut job).cancel_when(std::future::ready(()), CancelReason::Timeout));
    let stopped = match waited {
        // Still running when the race looked again: the handle is still ours, and it waits
        // until the closure returned, with what it returned.
        Err(NativeError::Abandoned {
            reason: CancelReason::Timeout,
            grace: Duration::ZERO,
            ..
        }) => block_on(&mut job).unwrap_err(),
        // The spinning closure saw the cancel and returned before the race looked again: the
        // same stop, delivered already.
        Err(stopped @ NativeError::Cancelled { .. }) => stopped,
        other => panic!("{other:?}"),
    };
    assert_eq!(stopped.cancel_reason(), Some(CancelReason::Timeout));
    assert_eq!(stopped.into_returned(), Some(CancelReason::Timeout));
}

#[test]
fn cancel_after_through_the_tethered_trait_times_out_then_waits_for_the_closure() {
    fn time_out<J: Tethered>(job: &J) {
        job.cancel_after(Duration::from_millis(20)).unwrap();
    }
    let (job, started) = spinning_job();
    started.recv().unwrap();
    time_out(&job);
    let stopped = job.join_blocking().unwrap_err();
    assert_eq!(stopped.cancel_reason(), Some(CancelReason::Timeout));
    assert_eq!(stopped.into_returned(), Some(CancelReason::Timeout));
}

/// The OS's name for the calling thread, as `top -H` shows it.
#[cfg(target_os = "linux")]
fn os_thread_name() -> String {
    std::fs::read_to_string("/proc/thread-self/comm")
        .unwrap()
        .trim_end()
        .to_owned()
}

#[cfg(target_os = "linux")]
#[test]
fn a_named_job_names_its_pool_thread_while_it_runs_and_gives_the_name_back() {
    let pool = QueueSpawner::default();
    let named = tethered::spawn(
        JobOptions::new()
            .name("script-request-4711")
            .on(pool.clone()),
        |_| os_thread_name(),
    )
    .unwrap();
    let unnamed =
        tethered::spawn(JobOptions::new().on(pool.clone()), |_| os_thread_name()).unwrap();
    let worker = thread::Builder::new()
        .name("pool-worker".into())
        .spawn(move || {
            pool.take().run();
            let after_named = os_thread_name();
            pool.take().run();
            after_named
        })
        .unwrap();
    assert_eq!(worker.join().unwrap(), "pool-worker");
    // The kernel keeps 15 bytes of a name.
    assert_eq!(named.join_blocking().unwrap(), "script-request-");
    assert_eq!(unnamed.join_blocking().unwrap(), "pool-worker");
}

#[cfg(target_os = "linux")]
#[test]
fn a_named_job_that_panics_still_gives_its_thread_its_name_back() {
    let pool = QueueSpawner::default();
    let job = tethered::spawn(
        JobOptions::new().name("doomed").on(pool.clone()),
        |_| -> () { panic!("inside a named job") },
    )
    .unwrap();
    let worker = thread::Builder::new()
        .name("pool-worker".into())
        .spawn(move || {
            pool.take().run();
            os_thread_name()
        })
        .unwrap();
    assert_eq!(worker.join().unwrap(), "pool-worker");
    assert!(job.join_blocking().unwrap_err().is_panic());
}
