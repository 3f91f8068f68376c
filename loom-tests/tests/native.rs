//! Model 7: `AbortableNative`: completion against handle drop, `cancel`, `cancel_and_join` and
//! a pool that drops the job unrun; results delivered exactly once; stats back to zero.

use loom_tests::{
    HeldSpawner, JoinableSpawner, block_on, model,
    sync::{Arc, AtomicBool, Ordering},
    thread,
};
use tethered::{CancelReason, CancelSource, JobOptions, NativeError, Tethered, stats};

/// A cancel racing the job's start: either the closure ran (and its value arrives) or the
/// closure never ran (and the cancel arrives). Never both, never neither. And when the cancel
/// had completed before the runner started, the closure must not run.
#[test]
fn cancel_before_start_means_the_closure_never_runs() {
    model("native_cancel_vs_start", || {
        let cancel_done = Arc::new(AtomicBool::new(false));
        let spawner = WatchingSpawner {
            cancel_done: cancel_done.clone(),
            started_after_cancel: Arc::new(AtomicBool::new(false)),
            thread: std::sync::Arc::new(std::sync::Mutex::new(None)),
        };
        let source = CancelSource::new();
        let ran = Arc::new(AtomicBool::new(false));
        let job = {
            let ran = ran.clone();
            let options = JobOptions::new()
                .child_of(&source.token())
                .on(spawner.clone());
            tethered::spawn(options, move |_token| {
                ran.store(true, Ordering::SeqCst);
                7
            })
            .unwrap()
        };
        let canceller = thread::spawn(move || {
            source.cancel(CancelReason::Requested);
            cancel_done.store(true, Ordering::SeqCst);
        });
        let result = job.join_blocking();
        canceller.join().unwrap();
        spawner
            .thread
            .lock()
            .unwrap()
            .take()
            .unwrap()
            .join()
            .unwrap();
        let ran = ran.load(Ordering::SeqCst);
        match result {
            Ok(7) => assert!(ran),
            Err(NativeError::Cancelled {
                reason: CancelReason::Requested,
                returned: None,
                ..
            }) => {
                assert!(!ran, "a job stopped before it ran also ran")
            }
            // The cancel came while the closure ran: the stop carries what it returned.
            Err(NativeError::Cancelled {
                reason: CancelReason::Requested,
                returned: Some(value),
                ..
            }) if *value == 7 => assert!(ran),
            other => panic!("unexpected result {other:?}"),
        }
        if spawner.started_after_cancel.load(Ordering::SeqCst) {
            assert!(
                !ran,
                "the cancel completed before the runner started, yet the closure ran"
            );
        }
        assert_eq!(stats().running, 0);
    });
}

/// Runs the task on a model thread and records whether the cancel had already completed
/// when the runner started. Its clones share what they record.
#[derive(Clone)]
struct WatchingSpawner {
    cancel_done: Arc<AtomicBool>,
    started_after_cancel: Arc<AtomicBool>,
    thread: std::sync::Arc<std::sync::Mutex<Option<thread::JoinHandle<()>>>>,
}

impl tethered::Spawner for WatchingSpawner {
    fn spawn(&self, task: tethered::Runnable) -> Result<(), tethered::SpawnError> {
        let cancel_done = self.cancel_done.clone();
        let started_after_cancel = self.started_after_cancel.clone();
        let handle = thread::spawn(move || {
            if cancel_done.load(Ordering::SeqCst) {
                started_after_cancel.store(true, Ordering::SeqCst);
            }
            task.run();
        });
        *self.thread.lock().unwrap() = Some(handle);
        Ok(())
    }
}

/// The handle dropped while the job completes: if the token ends up cancelled, it was by the
/// drop, and exactly then the job counts as cancelled (a finished job's token is sealed, so a
/// drop after the finish cancels nothing); every counter is back to zero once the thread is
/// done.
#[test]
fn handle_drop_vs_completion() {
    model("native_drop_vs_completion", || {
        let base = stats();
        let spawner = JoinableSpawner::default();
        let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |token| {
            token.is_cancelled()
        })
        .unwrap();
        let token = job.token().clone();
        drop(job);
        spawner.join_all();
        let after = stats();
        assert_eq!(after.running, 0);
        assert_eq!(after.detached, 0);
        assert_eq!(after.spawned, base.spawned + 1);
        let counted = after.cancelled - base.cancelled;
        assert!(counted <= 1);
        assert_eq!(
            token.is_cancelled(),
            counted == 1,
            "the token was cancelled after the job finished"
        );
        if let Some(reason) = token.reason() {
            assert_eq!(reason, CancelReason::Dropped);
        }
    });
}

/// `cancel_and_join` resolves only after the closure returned (or when it never ran).
#[test]
fn cancel_and_join_waits_for_the_closure() {
    model("native_cancel_and_join", || {
        let spawner = JoinableSpawner::default();
        let returned = Arc::new(AtomicBool::new(false));
        let job = {
            let returned = returned.clone();
            tethered::spawn(JobOptions::new().on(spawner.clone()), move |token| {
                while !token.is_cancelled() {
                    thread::yield_now();
                }
                returned.store(true, Ordering::SeqCst);
                token.reason()
            })
            .unwrap()
        };
        match block_on(job.cancel_and_join()) {
            Err(NativeError::Cancelled {
                reason: CancelReason::Requested,
                returned: Some(seen),
                ..
            }) => {
                assert_eq!(*seen, Some(CancelReason::Requested));
                assert!(
                    returned.load(Ordering::SeqCst),
                    "joined before the closure returned"
                );
            }
            Err(NativeError::Cancelled {
                reason: CancelReason::Requested,
                returned: None,
                ..
            }) => {
                assert!(!returned.load(Ordering::SeqCst))
            }
            other => panic!("unexpected result {other:?}"),
        }
        spawner.join_all();
        assert_eq!(stats().running, 0);
    });
}

/// A pool that drops the job unrun (shutdown) racing a cancel from the handle: the closure
/// never runs, and the handle gets the cancel of whichever came first, exactly once.
#[test]
fn pool_drops_the_job_unrun_vs_cancel() {
    model("native_unrun_drop_vs_cancel", || {
        let spawner = HeldSpawner::default();
        let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |_| {
            unreachable!("never runs")
        })
        .unwrap();
        let pool = {
            let spawner = spawner.clone();
            thread::spawn(move || drop(spawner.take()))
        };
        job.cancel(CancelReason::Timeout);
        let token = job.token().clone();
        let result: Result<(), NativeError<()>> = block_on(job);
        pool.join().unwrap();
        match result {
            // The pool dropped it first.
            Err(NativeError::Cancelled {
                reason: CancelReason::Shutdown,
                ..
            }) => {}
            // The handle's cancel finished it while it was still queued.
            Err(NativeError::Cancelled {
                reason: CancelReason::Timeout,
                ..
            }) => {
                assert_eq!(token.reason(), Some(CancelReason::Timeout))
            }
            other => panic!("unexpected result {other:?}"),
        }
    });
}

/// The pool runs the job while the handle is polled and then dropped: the result arrives
/// exactly once, through whichever of poll and join sees it.
#[test]
fn run_vs_poll_vs_drop_delivers_the_result_once() {
    model("native_run_vs_poll", || {
        let spawner = HeldSpawner::default();
        let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |_| 11).unwrap();
        let worker = {
            let spawner = spawner.clone();
            thread::spawn(move || spawner.take().run())
        };
        let mut job = Box::pin(job);
        let polled = std::future::Future::poll(
            job.as_mut(),
            &mut std::task::Context::from_waker(std::task::Waker::noop()),
        );
        match polled {
            std::task::Poll::Ready(result) => assert_eq!(result.unwrap(), 11),
            std::task::Poll::Pending => drop(job),
        }
        worker.join().unwrap();
        assert_eq!(stats().running, 0);
    });
}

/// Detaching while the job completes: `detached` returns to zero.
#[test]
fn detach_vs_completion_returns_detached_to_zero() {
    model("native_detach_vs_completion", || {
        let spawner = JoinableSpawner::default();
        let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |token| {
            token.is_cancelled()
        })
        .unwrap();
        let token = job.token().clone();
        job.detach();
        spawner.join_all();
        assert!(!token.is_cancelled());
        assert_eq!(stats().detached, 0);
        assert_eq!(stats().running, 0);
    });
}

/// A cancel through the handle racing the pool's start of the job: a job whose closure had not
/// started finishes at once (its closure dropped unrun, the pool's later run a no-op); one that
/// started runs to its end. The result arrives exactly once either way.
#[test]
fn handle_cancel_vs_pool_start() {
    model("native_handle_cancel_vs_pool_start", || {
        let spawner = HeldSpawner::default();
        let ran = Arc::new(AtomicBool::new(false));
        let job = {
            let ran = ran.clone();
            tethered::spawn(JobOptions::new().on(spawner.clone()), move |_| {
                ran.store(true, Ordering::SeqCst);
                5
            })
            .unwrap()
        };
        let pool = {
            let spawner = spawner.clone();
            thread::spawn(move || spawner.take().run())
        };
        job.cancel(CancelReason::Timeout);
        let result = job.join_blocking();
        pool.join().unwrap();
        match result {
            Ok(5) => assert!(ran.load(Ordering::SeqCst)),
            Err(NativeError::Cancelled {
                reason: CancelReason::Timeout,
                returned: None,
                ..
            }) => {
                assert!(
                    !ran.load(Ordering::SeqCst),
                    "stopped before it ran, yet it ran"
                )
            }
            Err(NativeError::Cancelled {
                reason: CancelReason::Timeout,
                returned: Some(value),
                ..
            }) if *value == 5 => assert!(ran.load(Ordering::SeqCst)),
            other => panic!("unexpected result {other:?}"),
        }
        assert_eq!(stats().running, 0);
        assert_eq!(stats().queued, 0);
    });
}

/// A job whose token a parent cancels while it is spawned: it may finish before its spawn is
/// accepted or after, and either way a cancelled job counts in `stats().cancelled` exactly once
/// (whichever of the finish and the acceptance comes second counts it).
#[test]
fn a_cancel_is_counted_once_whether_the_job_finishes_before_or_after_its_acceptance() {
    model("native_finish_vs_accept_counts_once", || {
        let base = stats();
        let spawner = JoinableSpawner::default();
        let parent = CancelSource::new();
        let canceller = {
            let parent = parent.clone();
            thread::spawn(move || {
                parent.cancel(CancelReason::Shutdown);
            })
        };
        let options = JobOptions::new()
            .child_of(&parent.token())
            .on(spawner.clone());
        let job = tethered::spawn(options, |_| ()).unwrap();
        let token = job.token().clone();
        let result = job.join_blocking();
        canceller.join().unwrap();
        spawner.join_all();
        let counted = stats().cancelled - base.cancelled;
        let cancelled = token.is_cancelled();
        assert_eq!(counted, u64::from(cancelled), "{result:?}");
        assert_eq!(result.is_err(), cancelled);
    });
}
