//! A job whose work runs elsewhere and reports through a `Completer`: tethered, counted,
//! cancelled and read like a spawned job.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use tethered::{AbortableNative, CancelReason, CancelSource, NativeError, stats};

#[test]
fn a_completed_external_job_gives_its_value_and_counts_as_running_until_then() {
    let base = stats();
    let (job, completer) = AbortableNative::builder().name("remote").external::<u32>();
    assert_eq!(job.name(), Some("remote"));
    assert!(stats().running > base.running);
    assert!(!job.is_finished());
    completer.complete(7);
    assert!(job.is_finished());
    assert_eq!(job.join_blocking().unwrap(), 7);
}

#[test]
fn a_cancel_reaches_the_work_through_the_completers_token_and_reads_as_a_stop() {
    let (job, completer) = AbortableNative::builder().external::<&str>();
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
    let (job, completer) = AbortableNative::builder().external::<()>();
    drop(job);
    assert_eq!(completer.token().reason(), Some(CancelReason::Dropped));
    completer.complete(()); // nobody takes it: dropped quietly
}

#[test]
fn a_completer_dropped_unfinished_stops_the_job_with_shutdown() {
    let (job, completer) = AbortableNative::builder().external::<u8>();
    let token = job.token();
    drop(completer);
    let err = job.join_blocking().unwrap_err();
    assert!(matches!(
        err,
        NativeError::Cancelled {
            reason: CancelReason::Shutdown,
            returned: None
        }
    ));
    assert_eq!(token.reason(), Some(CancelReason::Shutdown));
}

#[test]
fn a_completer_dropped_after_a_cancel_stops_the_job_with_that_cancels_reason() {
    let parent = CancelSource::new();
    let (job, completer) = AbortableNative::builder()
        .child_of(&parent.token())
        .external::<u8>();
    parent.cancel(CancelReason::custom("client gone"));
    drop(completer);
    let err = job.join_blocking().unwrap_err();
    assert_eq!(
        err.cancel_reason(),
        Some(&CancelReason::custom("client gone"))
    );
}

#[test]
fn an_external_job_abandons_after_its_grace_like_a_spawned_one() {
    let (job, completer) = AbortableNative::builder()
        .abandon_after(Duration::from_millis(10))
        .external::<()>();
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
    let (job, completer) = AbortableNative::builder().external::<u8>();
    let token = job.token();
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
        let (job, completer) = AbortableNative::builder().external::<u32>();
        let worker = thread::spawn(move || completer.complete(11));
        assert_eq!(futures_executor::block_on(job).unwrap(), 11);
        worker.join().unwrap();
    }
}
