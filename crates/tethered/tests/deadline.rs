//! `AbortableNative::cancel_after`: a job's own deadline on the crate's timer thread. It
//! cancels an unfinished job with `Timeout` (a waiting one finishes at once), the handle then
//! answers once the closure has returned, and a job that finishes first is left alone.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use support::QueueSpawner;
use tethered::{AbortableNative, CancelReason, JobOptions, NativeError, Tethered};

#[test]
fn the_deadline_cancels_a_running_job_and_the_join_waits_for_its_closure() {
    let returned = Arc::new(AtomicBool::new(false));
    let done = returned.clone();
    let job = AbortableNative::spawn(move |token| {
        while !token.is_cancelled() {
            thread::sleep(Duration::from_millis(1));
        }
        thread::sleep(Duration::from_millis(20)); // winding down takes a while
        done.store(true, Ordering::SeqCst);
        token.reason()
    });
    let started = Instant::now();
    job.cancel_after(Duration::from_millis(30)).unwrap();
    let outcome = job.join_blocking();
    assert!(started.elapsed() >= Duration::from_millis(30));
    assert!(
        returned.load(Ordering::SeqCst),
        "the join answered only once the closure had returned"
    );
    match outcome {
        Err(NativeError::Cancelled {
            reason: CancelReason::Timeout,
            returned: Some(seen),
            ..
        }) => assert_eq!(*seen, Some(CancelReason::Timeout)),
        other => panic!("the closure ran, so the stop carries what it returned: {other:?}"),
    }
}

#[test]
fn a_job_that_finishes_first_keeps_its_result_and_is_never_cancelled() {
    let job = AbortableNative::spawn(|_| 5);
    let token = job.token().clone();
    job.cancel_after(Duration::from_millis(20)).unwrap();
    assert_eq!(job.join_blocking().unwrap(), 5);
    thread::sleep(Duration::from_millis(60));
    assert!(!token.is_cancelled(), "the deadline left with the finish");
    assert_eq!(token.registrations(), 0, "nothing stays registered");
}

#[test]
fn zero_fires_at_once_and_duration_max_never_fires() {
    let job = AbortableNative::spawn(|token| token.wait());
    job.cancel_after(Duration::ZERO).unwrap();
    let started = Instant::now();
    let outcome = job.join_blocking();
    assert!(started.elapsed() < Duration::from_secs(5));
    match outcome {
        Ok(reason) => assert_eq!(reason, CancelReason::Timeout),
        Err(err) => assert_eq!(err.cancel_reason(), Some(CancelReason::Timeout)),
    }

    let job = AbortableNative::spawn(|token| token.wait_timeout(Duration::from_millis(50)));
    job.cancel_after(Duration::MAX).unwrap();
    assert_eq!(job.join_blocking().unwrap(), None, "never cancelled");
}

#[test]
fn a_job_still_waiting_for_a_thread_finishes_at_its_deadline() {
    let pool = QueueSpawner::default();
    let job = tethered::spawn(JobOptions::new().on(pool.clone()), |_| {
        unreachable!("never started")
    })
    .unwrap();
    job.cancel_after(Duration::from_millis(10)).unwrap();
    let started = Instant::now();
    match job.join_blocking() {
        Err(NativeError::Cancelled { reason, .. }) => assert_eq!(reason, CancelReason::Timeout),
        other => panic!("expected a cancelled job, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    // The pool runs it late: it skips the closure.
    pool.take().run();
}

/// A source's deadline holds while anything can observe the source: a token of it, or a child
/// of it (a deadline is a callback of its token, so the token is not spliced out of the tree
/// while it waits).
#[test]
fn a_source_deadline_reaches_its_tokens_and_children_after_the_source_is_gone() {
    let source = tethered::CancelSource::new();
    let token = source.token();
    source.cancel_after(Duration::from_millis(20)).unwrap();
    drop(source);
    assert_eq!(
        token.wait_timeout(Duration::from_secs(10)),
        Some(CancelReason::Timeout)
    );

    let source = tethered::CancelSource::new();
    source.cancel_after(Duration::from_millis(20)).unwrap();
    let child = source.child();
    drop(source);
    assert_eq!(
        child.token().wait_timeout(Duration::from_secs(10)),
        Some(CancelReason::Timeout)
    );
}

#[test]
fn a_token_without_a_deadline_has_no_time_left() {
    let source = tethered::CancelSource::new();
    assert_eq!(source.token().deadline(), None);
    assert_eq!(source.token().child().token().time_left(), None);
    assert_eq!(tethered::CancelToken::never().time_left(), None);
    // A deadline too far for an `Instant` is no deadline.
    source.cancel_after(Duration::MAX).unwrap();
    assert_eq!(source.token().deadline(), None);
}

#[test]
fn a_child_inherits_the_earliest_deadline_above_it_even_one_set_after_it_was_made() {
    let root = tethered::CancelSource::new();
    let middle = root.token().child();
    let leaf = middle.token().child();
    middle.cancel_after(Duration::from_secs(60)).unwrap();
    let middles = middle.token().deadline().expect("its own deadline");
    assert_eq!(leaf.token().deadline(), Some(middles));
    assert_eq!(root.token().deadline(), None, "a parent does not inherit");
    // Set on the root after the leaf was made: earlier, so it wins.
    root.cancel_after(Duration::from_secs(30)).unwrap();
    let roots = root.token().deadline().unwrap();
    assert!(roots < middles);
    assert_eq!(leaf.token().deadline(), Some(roots));
    // The leaf's own, later one does not move it.
    leaf.cancel_after(Duration::from_secs(90)).unwrap();
    assert_eq!(leaf.token().deadline(), Some(roots));
    let left = leaf.token().time_left().unwrap();
    assert!(
        left <= Duration::from_secs(30) && left > Duration::from_secs(20),
        "{left:?}"
    );
}

#[test]
fn time_left_is_zero_once_the_deadline_passed() {
    let source = tethered::CancelSource::new();
    source.cancel_after(Duration::from_millis(1)).unwrap();
    assert_eq!(source.token().wait(), CancelReason::Timeout);
    assert_eq!(source.token().time_left(), Some(Duration::ZERO));
}

#[test]
fn a_jobs_cancel_after_is_the_deadline_its_closure_reads() {
    let (started_tx, started) = std::sync::mpsc::channel();
    let (go_tx, go) = std::sync::mpsc::channel::<()>();
    let job = AbortableNative::spawn(move |token| {
        started_tx.send(()).unwrap();
        go.recv().unwrap();
        token.time_left()
    });
    started.recv().unwrap();
    job.cancel_after(Duration::from_secs(60)).unwrap();
    go_tx.send(()).unwrap();
    let left = job.join_blocking().unwrap().expect("the handle's deadline");
    assert!(left > Duration::from_secs(50), "{left:?}");
}

#[test]
fn a_scope_job_tied_to_a_request_reads_the_requests_deadline() {
    let scope = tethered::NativeScope::new();
    let request = tethered::CancelSource::new();
    request.cancel_after(Duration::from_secs(45)).unwrap();
    let job = tethered::spawn(
        JobOptions::new()
            .child_of(&request.token())
            .in_scope(&scope),
        |token| token.deadline(),
    )
    .unwrap();
    assert_eq!(job.join_blocking().unwrap(), request.token().deadline());
}
