//! One lifecycle per job: finishing seals its own token, so a late cancel or drop changes
//! nothing; callbacks keep one order; deadlines saturate; a job never touches its caller's
//! token tree.

use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use tethered::{
    AbortableNative, CancelReason, CancelSource, CancelToken, JobOptions, NativeError, NativeScope,
    Tethered,
};

#[test]
fn a_job_never_cancels_the_callers_token_nor_its_siblings() {
    let shared = CancelSource::new();
    for round in 0..2_000 {
        // Through the caller's token, and through a child of it: neither hands the job the
        // caller's token.
        let parent = if round % 4 < 2 {
            shared.token()
        } else {
            shared.token().child().token()
        };
        let job = tethered::spawn(
            JobOptions::new()
                .child_of(&parent)
                .on(tethered::ThreadSpawner::new()),
            |token| token.is_cancelled(),
        )
        .unwrap();
        // Half are dropped at once (often unfinished), half after they finished.
        if round % 2 == 1 {
            while !job.is_finished() {
                thread::yield_now();
            }
        }
        drop(job);
        assert!(
            !shared.is_cancelled(),
            "round {round}: a dropped job cancelled the caller's source"
        );
    }
    tethered::testing::assert_all_returned(Duration::from_secs(10));
    assert_eq!(shared.token().registrations(), 0, "finished jobs unlinked");
}

#[test]
fn cancelling_or_dropping_a_finished_job_changes_nothing() {
    for _ in 0..1_000 {
        let job = AbortableNative::spawn(|_| 7);
        let token = job.token().clone();
        let abort = job.abort_handle();
        while !job.is_finished() {
            thread::yield_now();
        }
        assert!(
            !job.cancel(CancelReason::Requested),
            "a finished job is sealed"
        );
        assert!(!abort.cancel(CancelReason::Requested));
        assert!(!token.is_cancelled());
        drop(job);
        assert_eq!(
            token.reason(),
            None,
            "dropping a finished job cancels nothing"
        );
    }
}

/// A waker that counts its wakes.
#[derive(Default)]
struct Count(Mutex<usize>);

impl Wake for Count {
    fn wake(self: Arc<Self>) {
        *self.0.lock().unwrap() += 1;
    }
}

#[test]
fn a_timeout_that_fires_as_the_job_finishes_never_loses_the_result() {
    // The signal is ready at once and the job finishes at once: whichever wins the token's
    // lock decides, and a result that won is always delivered.
    let (mut ok, mut cancelled) = (0, 0);
    for _ in 0..2_000 {
        let job = AbortableNative::spawn(|_| 42);
        let token = job.token().clone();
        let raced = job.cancel_when(std::future::ready(()), CancelReason::Timeout);
        match futures_executor::block_on(raced) {
            Ok(value) => {
                assert_eq!(value, 42);
                assert_eq!(
                    token.reason(),
                    None,
                    "a delivered result was never cancelled"
                );
                ok += 1;
            }
            // The cancel won: the job had not started (`Cancelled`, nothing returned), its
            // closure returned between the cancel and the race's second look (`Cancelled`,
            // with what it returned), or it was still running (`Abandoned`).
            Err(NativeError::Cancelled {
                reason: CancelReason::Timeout,
                returned,
                ..
            }) => {
                assert!(
                    returned.as_deref().is_none_or(|&value| value == 42),
                    "{returned:?}"
                );
                assert_eq!(token.reason(), Some(CancelReason::Timeout));
                cancelled += 1;
            }
            Err(NativeError::Abandoned {
                reason: CancelReason::Timeout,
                ..
            }) => {
                assert_eq!(token.reason(), Some(CancelReason::Timeout));
                cancelled += 1;
            }
            Err(other) => panic!("unexpected {other}"),
        }
    }
    assert_eq!(ok + cancelled, 2_000);
}

#[test]
fn a_callback_registered_during_a_cancel_waits_its_turn() {
    let source = CancelSource::new();
    let token = source.token();
    let order = Arc::new(Mutex::new(Vec::new()));
    let (entered_tx, entered) = mpsc::channel();
    let (go_tx, go) = mpsc::channel::<()>();
    let first = order.clone();
    token
        .on_cancel(move |_| {
            entered_tx.send(thread::current().id()).unwrap();
            go.recv().unwrap(); // still running while another thread registers
            first.lock().unwrap().push("first");
        })
        .detach();
    let canceller = thread::spawn(move || {
        source.cancel(CancelReason::Requested);
        thread::current().id()
    });
    let cancelling_thread = entered.recv().unwrap();
    let late = order.clone();
    let guard = token.on_cancel(move |_| {
        late.lock()
            .unwrap()
            .push(if thread::current().id() == cancelling_thread {
                "late, on the cancelling thread"
            } else {
                "late, elsewhere"
            });
    });
    assert!(
        order.lock().unwrap().is_empty(),
        "the late callback did not run beside the first"
    );
    guard.detach();
    go_tx.send(()).unwrap();
    assert_eq!(canceller.join().unwrap(), cancelling_thread);
    assert_eq!(
        *order.lock().unwrap(),
        ["first", "late, on the cancelling thread"]
    );
    // Once the cancel is over, a registration runs inline, as before.
    let (tx, rx) = mpsc::channel();
    let _inline = token.on_cancel(move |_| tx.send(()).unwrap());
    rx.try_recv().expect("ran inline");
}

#[test]
fn abandon_after_duration_max_never_abandons_and_never_overflows() {
    let panics_before = tethered::stats().callback_panics;
    let (started_tx, started) = mpsc::channel();
    let job = tethered::spawn(
        JobOptions::new()
            .grace(Duration::MAX)
            .on(tethered::ThreadSpawner::new()),
        move |token| {
            started_tx.send(()).unwrap();
            token.wait()
        },
    )
    .unwrap();
    started.recv().unwrap();
    assert!(job.cancel(CancelReason::Timeout));
    let stopped = job.join_blocking().unwrap_err();
    assert_eq!(stopped.into_returned(), Some(CancelReason::Timeout));
    assert_eq!(
        tethered::stats().callback_panics,
        panics_before,
        "the abandon deadline did not overflow inside the job's cancel callback"
    );
}

#[test]
fn a_finished_shutdown_keeps_no_waker_in_the_timer() {
    let scope = NativeScope::new();
    let job = scope
        .spawn(|token| {
            token.wait();
        })
        .unwrap();
    let counter = Arc::new(Count::default());
    let waker = Waker::from(counter.clone());
    let mut cx = Context::from_waker(&waker);
    let mut shutdown = Box::pin(scope.shutdown(Duration::from_secs(3600)));
    // First poll: the job may still be returning, so the hour-long deadline is armed.
    let mut report = None;
    for _ in 0..10_000 {
        if let Poll::Ready(done) = shutdown.as_mut().poll(&mut cx) {
            report = Some(done);
            break;
        }
        thread::sleep(Duration::from_millis(1));
    }
    assert!(report.expect("the shutdown completed").is_clean());
    drop(shutdown);
    drop(job);
    drop(waker);
    assert_eq!(
        Arc::strong_count(&counter),
        1,
        "nothing (no timer entry) keeps the shutdown's waker until its deadline"
    );
}

#[test]
fn never_is_never_cancelled_and_drops_its_callbacks() {
    let token = CancelToken::never();
    let (tx, rx) = mpsc::channel::<()>();
    let guard = token.on_cancel(move |_| drop(tx));
    assert!(!guard.is_pending());
    assert!(
        rx.recv().is_err(),
        "the callback (and its sender) was dropped unrun"
    );
    let child = token.child();
    assert!(!child.is_cancelled());
    assert!(
        child.cancel(CancelReason::Requested),
        "a child still has its own source"
    );
    assert!(!token.is_cancelled());
}
