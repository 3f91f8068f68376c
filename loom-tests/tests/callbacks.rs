//! Model 4: `on_cancel` registration, running and deregistration against a cancel.

use loom_tests::{
    model,
    sync::{Arc, AtomicBool, AtomicUsize, Mutex, Ordering},
    thread,
};
use tethered::{CallbackGuard, CancelReason, CancelSource};

/// Registering while another thread cancels: the callback runs exactly once, either inline or
/// on the cancelling thread.
#[test]
fn callback_registered_during_a_cancel_runs_exactly_once() {
    model("on_cancel_vs_cancel", || {
        let source = CancelSource::new();
        let canceller = {
            let source = source.clone();
            thread::spawn(move || {
                source.cancel(CancelReason::Requested);
            })
        };
        let runs = Arc::new(AtomicUsize::new(0));
        let counter = runs.clone();
        let guard = source.token().on_cancel(move |reason| {
            assert_eq!(reason, CancelReason::Requested);
            counter.fetch_add(1, Ordering::SeqCst);
        });
        canceller.join().unwrap();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        drop(guard);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    });
}

/// A callback registered while the cancel still runs an earlier one (the token is
/// `CANCELLING`) waits its turn: it never runs beside the earlier callback, nor before it, and
/// it runs exactly once.
#[test]
fn callback_registered_while_a_cancel_runs_callbacks_waits_its_turn() {
    model("on_cancel_during_cancelling", || {
        let source = CancelSource::new();
        // 0: not started, 1: the first callback runs, 2: it returned.
        let first = Arc::new(AtomicUsize::new(0));
        let _first_guard = {
            let first = first.clone();
            source.token().on_cancel(move |_| {
                first.store(1, Ordering::SeqCst);
                thread::yield_now();
                first.store(2, Ordering::SeqCst);
            })
        };
        let canceller = {
            let source = source.clone();
            thread::spawn(move || {
                source.cancel(CancelReason::Requested);
            })
        };
        let second_runs = Arc::new(AtomicUsize::new(0));
        let guard = {
            let (first, runs) = (first.clone(), second_runs.clone());
            source.token().on_cancel(move |_| {
                assert_eq!(
                    first.load(Ordering::SeqCst),
                    2,
                    "a later callback ran beside or before an earlier one"
                );
                runs.fetch_add(1, Ordering::SeqCst);
            })
        };
        canceller.join().unwrap();
        assert_eq!(second_runs.load(Ordering::SeqCst), 1);
        drop(guard);
    });
}

/// A guard dropped while its callback runs on another thread waits for it to return; a guard
/// dropped before the callback started stops it from ever starting.
#[test]
fn guard_drop_waits_for_a_running_callback() {
    model("guard_drop_vs_running_callback", || {
        let source = CancelSource::new();
        let entered = Arc::new(AtomicBool::new(false));
        let finished = Arc::new(AtomicBool::new(false));
        let guard = {
            let entered = entered.clone();
            let finished = finished.clone();
            source.token().on_cancel(move |_| {
                entered.store(true, Ordering::SeqCst);
                thread::yield_now();
                finished.store(true, Ordering::SeqCst);
            })
        };
        let canceller = thread::spawn(move || {
            source.cancel(CancelReason::Requested);
        });
        drop(guard);
        let entered_at_drop = entered.load(Ordering::SeqCst);
        assert_eq!(
            entered_at_drop,
            finished.load(Ordering::SeqCst),
            "drop returned while the callback was running"
        );
        canceller.join().unwrap();
        assert_eq!(
            entered.load(Ordering::SeqCst),
            entered_at_drop,
            "the callback started after its guard was dropped"
        );
    });
}

/// A guard dropped inside its own callback returns at once instead of waiting for itself.
#[test]
fn guard_dropped_inside_its_own_callback_does_not_deadlock() {
    model("guard_drop_inside_own_callback", || {
        let source = CancelSource::new();
        let slot: Arc<Mutex<Option<CallbackGuard>>> = Arc::new(Mutex::new(None));
        let ran = Arc::new(AtomicBool::new(false));
        let guard = {
            let slot = slot.clone();
            let ran = ran.clone();
            source.token().on_cancel(move |_| {
                let own = slot.lock().unwrap().take();
                drop(own);
                ran.store(true, Ordering::SeqCst);
            })
        };
        *slot.lock().unwrap() = Some(guard);
        let canceller = thread::spawn(move || {
            source.cancel(CancelReason::Requested);
        });
        canceller.join().unwrap();
        assert!(ran.load(Ordering::SeqCst));
        assert!(slot.lock().unwrap().is_none());
    });
}

/// With two callbacks, the guard of the first dropped while the cancel runs them: the drop
/// never returns while the first runs, and is woken when the cancelling thread retires it and
/// takes out the second in one step; the second runs exactly once either way.
#[test]
fn guard_drop_is_woken_when_the_next_callback_takes_over() {
    model("guard_drop_vs_callback_hand_over", || {
        let source = CancelSource::new();
        let first_running = Arc::new(AtomicBool::new(false));
        let first_done = Arc::new(AtomicBool::new(false));
        let second_runs = Arc::new(AtomicUsize::new(0));
        let first = {
            let running = first_running.clone();
            let done = first_done.clone();
            source.token().on_cancel(move |_| {
                running.store(true, Ordering::SeqCst);
                thread::yield_now();
                done.store(true, Ordering::SeqCst);
            })
        };
        let second = {
            let runs = second_runs.clone();
            source.token().on_cancel(move |_| {
                runs.fetch_add(1, Ordering::SeqCst);
            })
        };
        let canceller = thread::spawn(move || {
            source.cancel(CancelReason::Requested);
        });
        drop(first);
        assert_eq!(
            first_running.load(Ordering::SeqCst),
            first_done.load(Ordering::SeqCst),
            "drop returned while the first callback was running"
        );
        canceller.join().unwrap();
        assert_eq!(second_runs.load(Ordering::SeqCst), 1);
        drop(second);
    });
}
