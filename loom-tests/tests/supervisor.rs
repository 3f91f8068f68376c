//! `tethered-process`'s supervisor: the shared state between the threads that spawn and cancel
//! children and the one thread that watches them (its inbox and wake channel), and a job's
//! launch, which a failed start and the spawn's return race for. Only under
//! `--cfg tethered_loom`: the state is reached through the crate's loom-only module.
//!
//! Hand reverts each model catches:
//! - taking the mail before draining the wake channel (`Inbox::collect`):
//!   `a_posted_child_is_never_left_without_a_wake`;
//! - delivering a new child without looking at its token (`Taken::deliver`):
//!   `a_cancel_that_comes_before_its_child_still_stops_it`;
//! - storing a failed start's error whether or not the job was handed out
//!   (`Launch::failed`): `a_failed_start_reaches_exactly_one_of_the_spawn_and_the_job`.
//!
//! Negative control (the model runs again with the old code put back, and must fail):
//! - signalling a cancelled child before looking whether it exited by itself
//!   (`process_cancel_before_exit`): `a_child_that_exited_before_its_cancel_is_reaped_as_exited`.

#![cfg(all(tethered_loom, unix))]

use std::collections::HashMap;

use loom_tests::sync::{AtomicBool, AtomicUsize, Ordering};
use loom_tests::{fails_with_fault, model, thread};
use tethered::{JobOptions, NativeError};
use tethered_process::Ended;
use tethered_process::loom::{ModelChild, ModelInbox, ModelLaunch};

fn child(id: u64) -> (ModelChild, std::sync::Arc<AtomicBool>) {
    let cancelled = std::sync::Arc::new(AtomicBool::new(false));
    (
        ModelChild {
            id,
            cancelled: cancelled.clone(),
            exited: std::sync::Arc::new(AtomicBool::new(false)),
            stopped: false,
            reaped: false,
        },
        cancelled,
    )
}

/// A spawning thread posts a child while the supervisor takes a turn: afterwards the child was
/// taken, or a wake byte is pending (so `poll` returns and the next turn takes it).
#[test]
fn a_posted_child_is_never_left_without_a_wake() {
    model("supervisor_post_vs_turn", || {
        let inbox = std::sync::Arc::new(ModelInbox::new());
        let wake = std::sync::Arc::new(AtomicUsize::new(0));
        let poster = {
            let (inbox, wake) = (inbox.clone(), wake.clone());
            thread::spawn(move || {
                if inbox.post(child(1).0) {
                    wake.fetch_add(1, Ordering::SeqCst);
                }
            })
        };
        let mut children = HashMap::new();
        inbox.turn(|| wake.store(0, Ordering::SeqCst), &mut children);
        poster.join().unwrap();
        let pending = wake.load(Ordering::SeqCst) > 0;
        assert!(
            children.contains_key(&1) || pending,
            "the child is in the inbox and nothing will wake the supervisor for it"
        );
        // The next turn, woken by that byte, takes it.
        inbox.turn(|| wake.store(0, Ordering::SeqCst), &mut children);
        assert!(children.contains_key(&1));
    });
}

/// The cancel link is registered before the child is posted, so a cancel from another thread
/// can reach the inbox before its child: the child is stopped all the same.
#[test]
fn a_cancel_that_comes_before_its_child_still_stops_it() {
    model("supervisor_cancel_vs_registration", || {
        let inbox = std::sync::Arc::new(ModelInbox::new());
        let (entry, flag) = child(7);
        let canceller = {
            let inbox = inbox.clone();
            thread::spawn(move || {
                // A token sets its flag, then runs its callbacks.
                flag.store(true, Ordering::SeqCst);
                inbox.cancel(7);
            })
        };
        let poster = {
            let inbox = inbox.clone();
            thread::spawn(move || {
                inbox.post(entry);
            })
        };
        let mut children = HashMap::new();
        inbox.turn(|| {}, &mut children);
        canceller.join().unwrap();
        poster.join().unwrap();
        inbox.turn(|| {}, &mut children);
        assert!(
            children.get(&7).is_some_and(|child| child.stopped),
            "the cancelled child was never stopped"
        );
    });
}

/// A child that waited for its scope's slot fails to start while the spawn returns: the error
/// reaches the spawn's caller or the job's output, exactly one of them.
#[test]
fn a_failed_start_reaches_exactly_one_of_the_spawn_and_the_job() {
    model("supervisor_failed_start_vs_hand_out", || {
        let launch = std::sync::Arc::new(ModelLaunch::new());
        // An unplaced external job's start runs at once, in `external`: it hands the completer
        // to the model, as the crate's launch hands it to the supervisor.
        let (completer_tx, completer_rx) = std::sync::mpsc::channel();
        let job = tethered::spawn_external(JobOptions::new(), move |completer| {
            completer_tx
                .send(completer)
                .expect("the model holds the receiver");
        })
        .expect("an unplaced job without a deadline needs no timer");
        let completer = completer_rx
            .try_recv()
            .expect("an unplaced external job starts at once");
        let starter = {
            let launch = launch.clone();
            thread::spawn(move || {
                launch.failed(
                    tethered::SpawnError::Start(std::io::Error::other("no such program")),
                    completer,
                );
            })
        };
        let spawned = launch.hand_out();
        starter.join().unwrap();
        let result = job.join_blocking();
        match (spawned, result) {
            // The spawn returned the error; the job it never handed out finished stopped.
            (Err(err), Err(NativeError::Cancelled { returned: None, .. })) => {
                assert!(
                    matches!(&err, tethered::SpawnError::Start(io) if io.to_string() == "no such program"),
                    "{err:?}"
                );
            }
            // The job was handed out: its output carries the error.
            (Ok(()), Ok(output)) => assert!(
                matches!(&output.ended, Ended::NeverStarted(tethered::SpawnError::Start(io)) if io.to_string() == "no such program"),
                "{output:?}"
            ),
            (spawned, result) => panic!("the error went astray: {spawned:?}, {result:?}"),
        }
    });
}

/// A child exits by itself, then its job is cancelled (a deadline that fires as it ends), while
/// the supervisor takes its turns: in every order the child is reaped as exited, never
/// signalled, so its output reads `Exited` and not "stopped by the polite signal".
#[test]
fn a_child_that_exited_before_its_cancel_is_reaped_as_exited() {
    model("supervisor_exit_vs_cancel", || {
        let inbox = std::sync::Arc::new(ModelInbox::new());
        let (child, cancelled) = child(1);
        let exited = child.exited.clone();
        let mut children = HashMap::new();
        inbox.post(child);
        inbox.turn(|| {}, &mut children);
        let ending = {
            let inbox = inbox.clone();
            thread::spawn(move || {
                exited.store(true, Ordering::SeqCst);
                cancelled.store(true, Ordering::SeqCst);
                inbox.cancel(1);
            })
        };
        inbox.turn(|| {}, &mut children);
        ending.join().unwrap();
        inbox.turn(|| {}, &mut children);
        let child = &children[&1];
        assert!(child.reaped, "the child that exited was not reaped");
        assert!(
            !child.stopped,
            "a child that exited before its cancel was signalled as if it still ran"
        );
    });
}

#[test]
fn negative_control_cancel_before_exit() {
    fails_with_fault(
        "a_child_that_exited_before_its_cancel_is_reaped_as_exited",
        "process_cancel_before_exit",
        "a child that exited before its cancel was signalled as if it still ran",
    );
}
