//! `CancelToken::arm`: an unblock action for a blocking call, run at most once, never after
//! its disarm, and the resource always comes back.

use std::panic::panic_any;
use std::sync::mpsc;
use std::time::Duration;

use tethered::{AbortableNative, CancelReason, CancelSource, Tethered};

#[test]
fn an_already_cancelled_token_runs_the_action_at_once() {
    let source = CancelSource::new();
    source.cancel(CancelReason::Timeout);
    let armed = source
        .token()
        .arm(Vec::new(), |log, reason| log.push(reason));
    assert!(armed.fired());
    assert_eq!(armed.disarm(), [CancelReason::Timeout]);
}

#[test]
fn a_panicking_action_still_gives_the_resource_back() {
    let source = CancelSource::new();
    let before = tethered::stats().callback_panics;
    let armed = source
        .token()
        .arm(7, |_, _| panic_any("an unblock that panics on purpose"));
    source.cancel(CancelReason::Requested);
    assert_eq!(armed.disarm(), 7);
    assert!(tethered::stats().callback_panics > before);
}

#[test]
fn a_blocking_channel_receive_ends_on_cancel() {
    let (tx, rx) = mpsc::channel::<Option<u32>>();
    let (started_tx, started) = mpsc::channel();
    let job = AbortableNative::spawn(move |token| {
        // The action holds a sender: a cancel sends the "stop" message the loop waits for.
        let armed = token.arm(tx, |tx, _| {
            let _ = tx.send(None);
        });
        started_tx.send(()).unwrap();
        let got = rx.recv_timeout(Duration::from_secs(60));
        drop(armed.disarm());
        got
    });
    started.recv().unwrap();
    assert!(job.cancel(CancelReason::Requested));
    let stopped = job.join_blocking().unwrap_err();
    assert_eq!(stopped.into_returned(), Some(Ok(None)));
}

#[test]
fn dropping_an_armed_disarms_it() {
    let source = CancelSource::new();
    let (tx, rx) = mpsc::channel::<()>();
    let armed = source.token().arm(tx, |tx, _| tx.send(()).unwrap());
    drop(armed);
    source.cancel(CancelReason::Requested);
    assert!(rx.recv().is_err(), "never ran, and the sender was dropped");
    assert_eq!(source.token().registrations(), 0);
}
