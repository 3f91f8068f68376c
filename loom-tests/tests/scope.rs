//! Model 8: `NativeScope`: its slot limit, waiting queue and shutdown against finishing jobs
//! and concurrent cancels.

use std::num::NonZeroUsize;
use std::sync::Arc;

use loom_tests::{JoinableSpawner, model, thread};
use tethered::{CancelReason, JobOptions, NativeError, NativeScope, Tethered, stats};

/// With one slot, a second job waits in the scope while the first finishes and another thread
/// cancels everything: each job finishes exactly once (run or skipped), the slot is handed on,
/// and the scope and the counters end empty.
#[test]
fn slot_handoff_vs_cancel_all() {
    model("scope_slot_handoff_vs_cancel_all", || {
        let spawner = Arc::new(JoinableSpawner::default());
        let scope = Arc::new(
            NativeScope::with_spawner(spawner.clone()).with_max_running(NonZeroUsize::MIN),
        );
        let first = scope.spawn(|_| 1).unwrap();
        let second = scope.spawn(|_| 2).unwrap();
        let canceller = {
            let scope = scope.clone();
            thread::spawn(move || scope.cancel_all(CancelReason::Requested))
        };
        let first = first.join_blocking();
        let second = second.join_blocking();
        canceller.join().unwrap();
        spawner.join_all();
        for (result, value) in [(first, 1), (second, 2)] {
            match result {
                Ok(v) => assert_eq!(v, value),
                Err(NativeError::Cancelled {
                    reason: CancelReason::Requested,
                    returned,
                    ..
                }) => assert!(returned.is_none_or(|v| *v == value)),
                Err(other) => panic!("unexpected {other}"),
            }
        }
        assert_eq!(scope.len(), 0);
        assert_eq!(stats().running, 0);
        assert_eq!(stats().queued, 0);
    });
}

/// A shutdown against a job that polls its token: the report counts it as returned (loom does
/// not model time, so the grace never runs out; a lost wake-up would be a deadlock).
#[test]
fn shutdown_vs_a_polling_job() {
    model("scope_shutdown_vs_polling_job", || {
        let spawner = Arc::new(JoinableSpawner::default());
        let scope = NativeScope::with_spawner(spawner.clone());
        scope
            .spawn(|token| {
                while !token.is_cancelled() {
                    thread::yield_now();
                }
            })
            .unwrap()
            .detach();
        let report = scope.shutdown_blocking(std::time::Duration::from_secs(3600));
        spawner.join_all();
        assert_eq!(report.cancelled, 1);
        assert_eq!(report.returned, 1);
        assert!(report.stragglers.is_empty());
        assert!(scope.is_empty());
        assert_eq!(stats().detached, 0);
    });
}

/// An external job waits for the scope's one slot while the first job's work completes it on
/// another thread and a third thread cancels the waiting job: the waiting job's start is
/// called at most once, and only if no cancel came before its slot; either way the job
/// resolves and the scope and the counters end empty.
#[test]
fn external_start_vs_cancel_while_waiting() {
    model("scope_external_start_vs_cancel", || {
        use loom_tests::sync::{AtomicUsize, Ordering};
        let spawner = Arc::new(JoinableSpawner::default());
        let scope = NativeScope::with_spawner(spawner.clone()).with_max_running(NonZeroUsize::MIN);
        let (first_tx, first_rx) = std::sync::mpsc::channel();
        let first =
            tethered::spawn_external(JobOptions::new().in_scope(&scope), move |completer| {
                first_tx.send(completer).unwrap()
            })
            .unwrap();
        let starts = Arc::new(AtomicUsize::new(0));
        let counted = starts.clone();
        let waiting =
            tethered::spawn_external(JobOptions::new().in_scope(&scope), move |completer| {
                counted.fetch_add(1, Ordering::SeqCst);
                completer.complete(2);
            })
            .unwrap();
        let completer = first_rx.recv().unwrap();
        let worker = thread::spawn(move || completer.complete(1));
        let abort = waiting.abort_handle();
        let canceller = thread::spawn(move || abort.cancel(CancelReason::Timeout));
        assert_eq!(first.join_blocking().unwrap(), 1);
        let second = waiting.join_blocking();
        worker.join().unwrap();
        canceller.join().unwrap();
        spawner.join_all();
        let started = starts.load(Ordering::SeqCst);
        assert!(started <= 1, "the start ran {started} times");
        match second {
            Ok(value) => assert_eq!((value, started), (2, 1)),
            // Cancelled after its start: the start ran and completed it.
            Err(NativeError::Cancelled {
                reason: CancelReason::Timeout,
                returned: Some(value),
                ..
            }) => assert_eq!((*value, started), (2, 1)),
            // Cancelled while it waited: never started.
            Err(NativeError::Cancelled {
                reason: CancelReason::Timeout,
                returned: None,
                ..
            }) => assert_eq!(started, 0),
            Err(other) => panic!("unexpected {other}"),
        }
        assert_eq!(scope.len(), 0);
        assert_eq!(stats().running, 0);
        assert_eq!(stats().queued, 0);
    });
}
