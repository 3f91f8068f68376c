//! `tethered-pyo3`'s shared state apart from Python: a job's tie to the future that awaits it
//! (finish vs the future's cancel vs the loop's close), and the exit gate (deliveries vs the
//! exit hook). Only under `--cfg tethered_loom`: reached through the crate's loom-only module.
//!
//! Hand reverts the models catch:
//! - not registering the job on its loop's token (`Tie::new`), or registering it after a
//!   close that came meanwhile is missed: `a_loop_closing_while_the_job_is_tied_still_stops_it`
//!   (the job waits for its cancel forever: loom reports the deadlock);
//! - handing out a pass after the gate closed (`Gate::enter`):
//!   `no_delivery_attaches_after_the_exit_hook_closed_the_gate`.

#![cfg(all(tethered_loom, unix))]

use loom_tests::sync::{Arc, AtomicBool, Ordering};
use loom_tests::{JoinableSpawner, model, thread};
use tethered::{CancelReason, CancelSource, JobOptions, NativeError};
use tethered_pyo3::loom::{ModelGate, ModelTie};

/// A job that finishes by itself while its future is cancelled on another thread and its loop
/// closes on a third: the outcome is taken and delivered exactly once, and reads as the job's
/// own return or a stop with one of the two reasons.
#[test]
fn an_outcome_is_delivered_exactly_once_whoever_stops_the_job() {
    model("pyo3_tie_finish_vs_cancel_vs_loop_close", || {
        let spawner = JoinableSpawner::default();
        let event_loop = CancelSource::new();
        let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |token| {
            token.is_cancelled()
        })
        .unwrap();
        let tie = ModelTie::new(job, &event_loop.token());
        let canceller = {
            let tie = tie.clone();
            thread::spawn(move || tie.future_cancelled(CancelReason::Dropped))
        };
        let closer = thread::spawn(move || event_loop.cancel(CancelReason::Shutdown));
        canceller.join().unwrap();
        closer.join().unwrap();
        spawner.join_all();
        let delivered = tie.take_delivered();
        assert_eq!(delivered.len(), 1, "{delivered:?}");
        match &delivered[0] {
            Ok(_) => {}
            Err(NativeError::Cancelled { reason, .. }) => assert!(
                matches!(reason, CancelReason::Dropped | CancelReason::Shutdown),
                "{reason:?}"
            ),
            Err(other) => panic!("unexpected {other}"),
        }
    });
}

/// The loop closes on another thread while the job is being tied to it: the job, which only
/// stops when cancelled, is stopped with `Shutdown` either way, and its outcome delivered once.
#[test]
fn a_loop_closing_while_the_job_is_tied_still_stops_it() {
    model("pyo3_tie_registration_vs_loop_close", || {
        let spawner = JoinableSpawner::default();
        let event_loop = CancelSource::new();
        let loop_token = event_loop.token();
        let closer = thread::spawn(move || event_loop.cancel(CancelReason::Shutdown));
        let job =
            tethered::spawn(JobOptions::new().on(spawner.clone()), |token| token.wait()).unwrap();
        let tie = ModelTie::new(job, &loop_token);
        closer.join().unwrap();
        spawner.join_all();
        let delivered = tie.take_delivered();
        assert_eq!(delivered.len(), 1, "{delivered:?}");
        match &delivered[0] {
            Err(NativeError::Cancelled {
                reason: CancelReason::Shutdown,
                ..
            }) => {}
            other => panic!("expected the loop's Shutdown: {other:?}"),
        }
    });
}

/// A delivery racing the exit hook: it either attached before the gate closed (and the hook
/// waited for it to leave) or found the gate closed and never attached.
#[test]
fn no_delivery_attaches_after_the_exit_hook_closed_the_gate() {
    model("pyo3_gate_delivery_vs_exit", || {
        let gate = Arc::new(ModelGate::new());
        let attached = Arc::new(AtomicBool::new(false));
        let delivery = {
            let (gate, attached) = (gate.clone(), attached.clone());
            thread::spawn(move || gate.deliver(|| attached.store(true, Ordering::SeqCst)))
        };
        let all_back = gate.close();
        // The hook returned: whatever attached has left, and nothing attaches from now on.
        assert!(all_back);
        let attached_before = attached.load(Ordering::SeqCst);
        let entered = delivery.join().unwrap();
        assert_eq!(entered, attached.load(Ordering::SeqCst));
        assert_eq!(
            attached.load(Ordering::SeqCst),
            attached_before,
            "a delivery attached after the exit hook returned"
        );
        assert!(!gate.deliver(|| unreachable!("the gate is closed")));
    });
}
