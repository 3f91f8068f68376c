//! `on_cancel`: push-style cancellation, and the `CallbackGuard` contract.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use tethered::{CallbackGuard, CancelReason, CancelSource};

#[test]
fn callback_runs_once_on_the_cancelling_thread_with_the_reason() {
    let source = CancelSource::new();
    let (tx, rx) = mpsc::channel();
    let _guard = source.token().on_cancel(move |reason| {
        tx.send((reason, thread::current().id())).unwrap();
    });
    let canceller = {
        let source = source.clone();
        thread::spawn(move || {
            source.cancel(CancelReason::Timeout);
            source.cancel(CancelReason::Requested);
            thread::current().id()
        })
    };
    let canceller_id = canceller.join().unwrap();
    assert_eq!(rx.recv().unwrap(), (CancelReason::Timeout, canceller_id));
    source.cancel(CancelReason::Shutdown);
    assert!(rx.try_recv().is_err(), "a callback runs at most once");
}

#[test]
fn callback_has_run_when_cancel_returns() {
    let source = CancelSource::new();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let _guard = source
        .token()
        .on_cancel(move |_| flag.store(true, Ordering::SeqCst));
    source.cancel(CancelReason::Requested);
    assert!(ran.load(Ordering::SeqCst));
}

#[test]
fn callback_on_a_cancelled_token_runs_inline_before_on_cancel_returns() {
    let source = CancelSource::new();
    source.cancel(CancelReason::Shutdown);
    let seen = Arc::new(Mutex::new(None));
    let slot = seen.clone();
    let me = thread::current().id();
    let guard = source.token().on_cancel(move |reason| {
        *slot.lock().unwrap() = Some((reason, thread::current().id()));
    });
    assert_eq!(*seen.lock().unwrap(), Some((CancelReason::Shutdown, me)));
    assert!(!guard.is_pending());
    drop(guard);
}

#[test]
fn callbacks_run_in_registration_order() {
    let source = CancelSource::new();
    let order = Arc::new(Mutex::new(Vec::new()));
    let guards: Vec<CallbackGuard> = (0..10)
        .map(|i| {
            let order = order.clone();
            source
                .token()
                .on_cancel(move |_| order.lock().unwrap().push(i))
        })
        .collect();
    source.cancel(CancelReason::Requested);
    assert_eq!(*order.lock().unwrap(), (0..10).collect::<Vec<_>>());
    drop(guards);
}

#[test]
fn dropped_guard_deregisters_its_callback() {
    let source = CancelSource::new();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let guard = source
        .token()
        .on_cancel(move |_| flag.store(true, Ordering::SeqCst));
    assert_eq!(source.token().registrations(), 1);
    assert!(guard.is_pending());
    drop(guard);
    assert_eq!(source.token().registrations(), 0);
    source.cancel(CancelReason::Requested);
    assert!(!ran.load(Ordering::SeqCst));
}

#[test]
fn detached_guard_keeps_the_callback() {
    let source = CancelSource::new();
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    source
        .token()
        .on_cancel(move |_| flag.store(true, Ordering::SeqCst))
        .detach();
    source.cancel(CancelReason::Requested);
    assert!(ran.load(Ordering::SeqCst));
}

#[test]
fn callback_may_use_the_token_and_register_more_without_deadlock() {
    let source = CancelSource::new();
    let token = source.token();
    let (tx, rx) = mpsc::channel();
    let inner_source = source.clone();
    let _guard = token.on_cancel(move |_| {
        let token = inner_source.token();
        // Everything here takes the token's lock: none of it may deadlock.
        assert!(token.is_cancelled());
        let reason = token.reason();
        assert!(!inner_source.cancel(CancelReason::Requested));
        let tx2 = tx.clone();
        // Registered while this callback runs: it waits its turn, after this one.
        let nested = token.on_cancel(move |r| tx2.send(format!("nested {r}")).unwrap());
        assert!(nested.is_pending());
        nested.detach();
        let dropped = token.on_cancel(|_| unreachable!("its guard was dropped before its turn"));
        drop(dropped);
        let _child = token.child();
        tx.send(format!("outer {}", reason.unwrap())).unwrap();
    });
    source.cancel(CancelReason::Timeout);
    assert_eq!(rx.recv().unwrap(), "outer the deadline passed");
    assert_eq!(rx.recv().unwrap(), "nested the deadline passed");
}

#[test]
fn callback_may_drop_another_pending_guard() {
    let source = CancelSource::new();
    let ran_second = Arc::new(AtomicBool::new(false));
    let flag = ran_second.clone();
    let second: Arc<Mutex<Option<CallbackGuard>>> = Arc::new(Mutex::new(None));
    let slot = second.clone();
    let _first = source.token().on_cancel(move |_| {
        drop(slot.lock().unwrap().take());
    });
    *second.lock().unwrap() = Some(
        source
            .token()
            .on_cancel(move |_| flag.store(true, Ordering::SeqCst)),
    );
    source.cancel(CancelReason::Requested);
    assert!(
        !ran_second.load(Ordering::SeqCst),
        "the second callback was deregistered before its turn"
    );
}

#[test]
fn guard_dropped_inside_its_own_callback_does_not_deadlock() {
    let source = CancelSource::new();
    let own: Arc<Mutex<Option<CallbackGuard>>> = Arc::new(Mutex::new(None));
    let slot = own.clone();
    let (tx, rx) = mpsc::channel();
    let guard = source.token().on_cancel(move |_| {
        let guard = slot.lock().unwrap().take();
        drop(guard); // our own guard
        tx.send(()).unwrap();
    });
    *own.lock().unwrap() = Some(guard);
    let canceller = thread::spawn(move || source.cancel(CancelReason::Requested));
    rx.recv_timeout(Duration::from_secs(10))
        .expect("the callback finished dropping its own guard");
    assert!(canceller.join().unwrap());
}

#[test]
fn guard_drop_waits_for_its_callback_running_on_another_thread() {
    for _ in 0..20 {
        let source = CancelSource::new();
        let (entered_tx, entered) = mpsc::channel();
        let finished = Arc::new(AtomicBool::new(false));
        let flag = finished.clone();
        let guard = source.token().on_cancel(move |_| {
            entered_tx.send(()).unwrap();
            thread::sleep(Duration::from_millis(30));
            flag.store(true, Ordering::SeqCst);
        });
        let canceller = thread::spawn(move || source.cancel(CancelReason::Requested));
        entered.recv().unwrap();
        drop(guard);
        assert!(
            finished.load(Ordering::SeqCst),
            "drop returned while the callback was still running"
        );
        canceller.join().unwrap();
    }
}

#[test]
fn callback_may_borrow_state_freed_right_after_its_guard_is_dropped() {
    // The owner frees the state (here: takes it out of the slot) right after dropping the
    // guard; the callback must never see it gone.
    // (A failed assertion inside a callback would be caught by `cancel`, so the callback
    // records what it saw instead.)
    let saw_freed = Arc::new(AtomicBool::new(false));
    for _ in 0..50 {
        let source = CancelSource::new();
        let state = Arc::new(Mutex::new(Some(String::from("alive"))));
        let seen = state.clone();
        let saw = saw_freed.clone();
        let guard = source.token().on_cancel(move |_| {
            thread::yield_now();
            if seen.lock().unwrap().as_deref() != Some("alive") {
                saw.store(true, Ordering::SeqCst);
            }
        });
        let canceller = {
            let source = source.clone();
            thread::spawn(move || source.cancel(CancelReason::Requested))
        };
        drop(guard);
        state.lock().unwrap().take();
        canceller.join().unwrap();
    }
    assert!(
        !saw_freed.load(Ordering::SeqCst),
        "a callback saw freed state"
    );
}

#[test]
fn panicking_callback_neither_stops_the_others_nor_poisons_the_token() {
    let source = CancelSource::new();
    let ran = Arc::new(AtomicUsize::new(0));
    let before = tethered::stats().callback_panics;
    let guards: Vec<_> = (0..3)
        .map(|i| {
            let ran = ran.clone();
            source.token().on_cancel(move |_| {
                ran.fetch_add(1, Ordering::SeqCst);
                if i == 1 {
                    panic!("callback {i} fails");
                }
            })
        })
        .collect();
    assert!(source.cancel(CancelReason::Timeout));
    assert_eq!(ran.load(Ordering::SeqCst), 3);
    assert!(tethered::stats().callback_panics > before);
    // The token still works: reason, new callbacks, children, waiting.
    let token = source.token();
    assert_eq!(token.reason(), Some(CancelReason::Timeout));
    let again = Arc::new(AtomicBool::new(false));
    let flag = again.clone();
    let _late = token.on_cancel(move |_| flag.store(true, Ordering::SeqCst));
    assert!(again.load(Ordering::SeqCst));
    assert!(token.child().is_cancelled());
    assert_eq!(
        token.wait_timeout(Duration::from_secs(5)),
        Some(CancelReason::Timeout)
    );
    drop(guards);
}

#[test]
fn panicking_inline_callback_does_not_escape_on_cancel() {
    let source = CancelSource::new();
    source.cancel(CancelReason::Requested);
    let before = tethered::stats().callback_panics;
    let guard = source.token().on_cancel(|_| panic!("inline failure"));
    assert!(!guard.is_pending());
    assert!(tethered::stats().callback_panics > before);
}

#[test]
fn registrations_drop_to_zero_after_cancel() {
    let source = CancelSource::new();
    let guards: Vec<_> = (0..5).map(|_| source.token().on_cancel(|_| {})).collect();
    assert_eq!(source.token().registrations(), 5);
    source.cancel(CancelReason::Requested);
    assert_eq!(source.token().registrations(), 0);
    drop(guards);
}
