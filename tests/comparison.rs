//! The README's comparison with `futures::future::Abortable`, shown on tokio's blocking pool.
//!
//! The other lines of that table are pinned by the adapters' tests (the naive halves of their
//! scenario tests) or link to the crates' documentation.
//!
//! The naive closure spins on a flag this test owns, and the test sets it before it ends, so no
//! closure outlives its test.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use futures_util::future::{Aborted, abortable};
use tethered::{CancelReason, Tethered};

mod stopping;
use stopping::{PATIENCE, wait_for};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .expect("a tokio runtime")
}

#[test]
fn abortable_stops_awaiting_but_a_started_spawn_blocking_closure_runs_on() {
    let runtime = runtime();
    let (started, stop, returned) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let closure = {
        let (started, stop, returned) = (started.clone(), stop.clone(), returned.clone());
        move || {
            started.store(true, Ordering::SeqCst);
            while !stop.load(Ordering::SeqCst) {
                std::hint::spin_loop();
            }
            returned.store(true, Ordering::SeqCst);
        }
    };
    let (job, abort) = runtime.block_on(async { abortable(tokio::task::spawn_blocking(closure)) });
    let task = runtime.spawn(job);
    assert!(wait_for(&started));

    abort.abort();
    let outcome = runtime
        .block_on(task)
        .expect("the awaiting task did not panic");
    assert!(matches!(outcome, Err(Aborted)));
    // The awaiting side is gone, handle and all; the closure still runs.
    std::thread::sleep(Duration::from_millis(100));
    assert!(!returned.load(Ordering::SeqCst), "nothing told the closure");

    stop.store(true, Ordering::SeqCst);
    assert!(wait_for(&returned));
}

#[test]
fn abortable_around_a_tethered_job_cancels_it_once_the_aborted_future_is_dropped() {
    let runtime = runtime();
    let (started, started_rx) = std::sync::mpsc::channel();
    let (job, token, abort) = runtime.block_on(async {
        let job = tethered_tokio::spawn_native(move |token| {
            let _ = started.send(());
            token.wait()
        });
        let token = job.token().clone();
        let (job, abort) = abortable(job);
        (job, token, abort)
    });
    let task = runtime.spawn(job);
    started_rx.recv_timeout(PATIENCE).expect("the job started");

    abort.abort();
    // `Abortable` answers `Aborted` and is dropped with its task, and with it the job's handle.
    let outcome = runtime
        .block_on(task)
        .expect("the awaiting task did not panic");
    assert!(matches!(outcome, Err(Aborted)));
    assert_eq!(token.wait_timeout(PATIENCE), Some(CancelReason::Dropped));
}
