//! Sealing: a job's fate is decided once, by its token's flag (under the token's lock, or by
//! one compare-exchange while nothing is attached to the token). A cancel (from the handle,
//! its drop, an abort handle or a race) either wins before the job finished, and then the job
//! counts as cancelled, or it finds the token sealed and changes nothing. The caller's own
//! token is never touched by the job.

use loom_tests::sync::{Arc, AtomicBool, Ordering};
use loom_tests::{JoinableSpawner, block_on, model, thread};
use tethered::{CancelReason, CancelSource, JobOptions, NativeError, Tethered, stats};

/// The handle dropped while the job completes, on a job tied to a shared parent: the token is
/// cancelled exactly when the job was unfinished at the drop (then it counts as cancelled),
/// and the parent is never cancelled.
#[test]
fn sealing_vs_handle_drop() {
    model("seal_vs_handle_drop", || {
        let base = stats();
        let parent = CancelSource::new();
        let spawner = JoinableSpawner::default();
        let job = tethered::spawn(
            JobOptions::new()
                .child_of(&parent.token())
                .on(spawner.clone()),
            |token| token.is_cancelled(),
        )
        .unwrap();
        let token = job.token().clone();
        drop(job);
        spawner.join_all();
        let counted = stats().cancelled - base.cancelled;
        assert_eq!(
            token.is_cancelled(),
            counted == 1,
            "a token is cancelled only while its job is unfinished, and then counts"
        );
        if let Some(reason) = token.reason() {
            assert_eq!(reason, CancelReason::Dropped);
        }
        assert!(
            !parent.is_cancelled(),
            "a job never cancels its caller's token"
        );
        assert_eq!(stats().running, 0);
    });
}

/// `cancel` racing completion: it returns `true` exactly when it cancelled an unfinished job.
#[test]
fn sealing_vs_cancel() {
    model("seal_vs_cancel", || {
        let base = stats();
        let spawner = JoinableSpawner::default();
        let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |_| 7).unwrap();
        let token = job.token().clone();
        let cancelled = job.cancel(CancelReason::Requested);
        let result = job.join_blocking();
        spawner.join_all();
        let counted = stats().cancelled - base.cancelled;
        assert_eq!(cancelled, token.is_cancelled());
        assert_eq!(cancelled, counted == 1, "`true` only for an unfinished job");
        if !cancelled {
            assert_eq!(result.unwrap(), 7, "a sealed job keeps its result");
        }
    });
}

/// A signal firing as the job finishes (a timeout at the last moment): a result that was
/// published is never lost, and a reported cancel was a real one.
#[test]
fn sealing_vs_cancel_when() {
    model("seal_vs_cancel_when", || {
        let base = stats();
        let spawner = JoinableSpawner::default();
        let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |_| 42).unwrap();
        let token = job.token().clone();
        let raced = job.cancel_when(std::future::ready(()), CancelReason::Timeout);
        let result = block_on(raced);
        spawner.join_all();
        let counted = stats().cancelled - base.cancelled;
        match result {
            Ok(value) => {
                assert_eq!(value, 42);
                assert!(
                    !token.is_cancelled(),
                    "a delivered result was not cancelled"
                );
                assert_eq!(counted, 0);
            }
            // The cancel won: the job had not started, or its closure returned after the
            // cancel (`Cancelled`), or it was still running when the race stopped waiting
            // (`Abandoned`).
            Err(
                NativeError::Cancelled {
                    reason: CancelReason::Timeout,
                    returned: None | Some(_),
                    ..
                }
                | NativeError::Abandoned {
                    reason: CancelReason::Timeout,
                    ..
                },
            ) => {
                assert_eq!(token.reason(), Some(CancelReason::Timeout));
                assert_eq!(
                    counted, 1,
                    "the job was unfinished when the timeout cancelled it"
                );
            }
            Err(other) => panic!("unexpected {other}"),
        }
    });
}

/// A registration on a plain job's token racing the seal of its finish, which takes no lock
/// while nothing is attached: the callback runs exactly when the cancel that follows it won,
/// and a callback that can never run is dropped by the time the job is done, not kept.
#[test]
fn registration_vs_lock_free_seal() {
    model("registration_vs_lock_free_seal", || {
        let spawner = JoinableSpawner::default();
        let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |_| 1).unwrap();
        let token = job.token().clone();
        let ran = Arc::new(AtomicBool::new(false));
        let witness = Arc::new(());
        let (flag, held) = (ran.clone(), witness.clone());
        let guard = token.on_cancel(move |_| {
            let _held = &held;
            flag.store(true, Ordering::SeqCst);
        });
        let cancelled = job.cancel(CancelReason::Requested);
        spawner.join_all();
        assert_eq!(
            ran.load(Ordering::SeqCst),
            cancelled,
            "the callback runs exactly when the cancel won"
        );
        assert_eq!(cancelled, token.is_cancelled());
        assert_eq!(
            Arc::strong_count(&witness),
            1,
            "a callback that ran, or never can, is dropped by the time the job is done"
        );
        drop(guard);
    });
}

/// The tree's iterative cancel racing the drop of a middle node's last handle: the grandchild
/// still hears the cancel through the middle node its own link keeps alive, and once every
/// handle is gone the root has nothing linked.
#[test]
fn iterative_cancel_vs_child_drop() {
    model("tree_cancel_vs_child_drop", || {
        let root = CancelSource::new();
        let middle = root.child();
        let leaf = middle.token().child();
        let sibling = root.child();
        let canceller = {
            let root = root.clone();
            thread::spawn(move || root.cancel(CancelReason::Shutdown))
        };
        drop(middle);
        drop(sibling);
        assert!(canceller.join().unwrap());
        assert_eq!(leaf.token().reason(), Some(CancelReason::Shutdown));
        drop(leaf);
        assert_eq!(root.token().registrations(), 0);
    });
}

/// A chain released (its last handle dropped, unlinking each level in a loop) while the root
/// cancels it (walking it with a stack): neither deadlocks, and the root ends unlinked.
#[test]
fn iterative_cancel_vs_chain_release() {
    model("tree_cancel_vs_chain_release", || {
        let root = CancelSource::new();
        // The leaf's source is the only handle below the root.
        let leaf = root.child().token().child().token().child();
        let releaser = thread::spawn(move || drop(leaf));
        assert!(root.cancel(CancelReason::Requested));
        releaser.join().unwrap();
        assert_eq!(root.token().registrations(), 0);
    });
}

/// Work that runs elsewhere finishes (a child exits) and reports later; a cancel races it. The
/// cancel asks the job's finished check: it returns `true` exactly when it stopped unfinished
/// work, the handle reads `Ok` otherwise, and a cancel made after the finish was seen changes
/// nothing.
#[test]
fn finished_work_vs_cancel() {
    model("finished_work_vs_cancel", || {
        let (job, completer) = external_job();
        let finished = Arc::new(AtomicBool::new(false));
        let seen = finished.clone();
        completer.finished_check(move || seen.load(Ordering::Acquire));
        let worker = thread::spawn(move || {
            finished.store(true, Ordering::Release);
            completer.complete(7u32);
        });
        let cancelled = job.cancel(CancelReason::Requested);
        let token = job.token().clone();
        let result = job.join_blocking();
        worker.join().unwrap();
        assert_eq!(cancelled, token.is_cancelled());
        match result {
            Ok(value) => {
                assert!(!cancelled, "a cancel that won reads as a stop");
                assert_eq!(value, 7);
            }
            Err(err) => {
                assert!(cancelled, "a stop that no cancel won: {err:?}");
                assert_eq!(err.cancel_reason(), Some(CancelReason::Requested));
            }
        }
    });
}

/// A cancel that comes once the finish is visible (as a cancel after a child's exit) never
/// stops the work, however the completion interleaves.
#[test]
fn a_cancel_after_the_finish_changes_nothing() {
    model("cancel_after_finish", || {
        let (job, completer) = external_job();
        let finished = Arc::new(AtomicBool::new(false));
        let seen = finished.clone();
        completer.finished_check(move || seen.load(Ordering::Acquire));
        let ready = Arc::new(AtomicBool::new(false));
        let worker = {
            let (finished, ready) = (finished.clone(), ready.clone());
            thread::spawn(move || {
                finished.store(true, Ordering::Release);
                ready.store(true, Ordering::Release);
                completer.complete(7u32);
            })
        };
        while !ready.load(Ordering::Acquire) {
            thread::yield_now();
        }
        assert!(
            !job.cancel(CancelReason::Requested),
            "a cancel after the finish changed something"
        );
        assert_eq!(job.join_blocking().unwrap(), 7);
        worker.join().unwrap();
    });
}

#[cfg(tethered_loom)]
#[test]
fn negative_control_a_cancel_that_ignores_finished_work_is_caught() {
    loom_tests::fails_with_fault(
        "a_cancel_after_the_finish_changes_nothing",
        "cancel_ignores_finished_work",
        "a cancel after the finish changed something",
    );
}

/// A job whose work runs elsewhere, and its completer.
fn external_job() -> (tethered::AbortableNative<u32>, tethered::Completer<u32>) {
    let slot = Arc::new(loom_tests::sync::Mutex::new(None));
    let job = tethered::spawn_external(JobOptions::new(), {
        let slot = slot.clone();
        move |completer| *slot.lock().unwrap() = Some(completer)
    })
    .unwrap();
    let completer = slot.lock().unwrap().take().expect("started at once");
    (job, completer)
}
