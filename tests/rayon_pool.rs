//! CPU-parallel work on rayon's global pool: first as tokio's docs send it there (`rayon::spawn`
//! and a oneshot), where a caller that gives up leaves every worker grinding; then as the
//! `rayon_pool` example runs it (a `Spawner` over `rayon::spawn`, a token check per item), where
//! a cancel stops every worker at its next item and the pool serves the next request.
//!
//! The example's own code is compiled in here. Both tests use the global pool, so they take
//! turns; the naive job stops at the test's own flag before its test ends.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use tethered::{CancelReason, JobOptions, Tethered};

#[allow(dead_code)]
#[path = "../examples/rayon_pool.rs"]
mod rayon_pool;

use rayon_pool::{RayonSpawner, digest, work};

mod stopping;
use stopping::{GIVE_UP_AFTER, PATIENCE, STOPS_WITHIN, wait_for};

/// Items no request gets through in a test's time.
const ENDLESS: u64 = 1 << 40;

/// One test at a time on rayon's global pool.
static GLOBAL_POOL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// How many items `done` counts `over` a while.
fn items_run(done: &AtomicU64, over: Duration) -> u64 {
    let before = done.load(Ordering::SeqCst);
    std::thread::sleep(over);
    done.load(Ordering::SeqCst) - before
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naive_rayon_spawn_keeps_the_workers_grinding_after_its_caller_gave_up() {
    let _pool = GLOBAL_POOL.lock().await;
    let (stop, done, returned) = (
        Arc::new(AtomicBool::new(false)), // the test's own way to end it
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let (answer_tx, answer) = tokio::sync::oneshot::channel();
    rayon::spawn({
        let (stop, done, returned) = (stop.clone(), done.clone(), returned.clone());
        move || {
            let finished = (0..ENDLESS).into_par_iter().try_for_each(|item| {
                if stop.load(Ordering::Relaxed) {
                    return Err(());
                }
                std::hint::black_box(work(item));
                done.fetch_add(1, Ordering::Relaxed);
                Ok(())
            });
            let _ = answer_tx.send(finished);
            returned.store(true, Ordering::SeqCst);
        }
    });
    assert!(tokio::time::timeout(GIVE_UP_AFTER, answer).await.is_err());
    tokio::time::sleep(Duration::from_millis(100)).await;
    let grinding = items_run(&done, Duration::from_millis(200));
    assert!(grinding > 0, "nothing told the workers");
    assert!(!returned.load(Ordering::SeqCst));

    stop.store(true, Ordering::SeqCst);
    assert!(wait_for(&returned));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_stops_every_worker_and_the_next_request_runs_at_once() {
    let _pool = GLOBAL_POOL.lock().await;
    let done = Arc::new(AtomicU64::new(0));
    let job = tethered::spawn(JobOptions::new().on(RayonSpawner), {
        let done = done.clone();
        move |token| digest(ENDLESS, &token, &done)
    })
    .unwrap();
    let deadline = Instant::now() + PATIENCE;
    while done.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert!(done.load(Ordering::SeqCst) > 0, "the job started");

    let cancelled = Instant::now();
    let answer = job.cancel_and_join_with(CancelReason::Timeout).await;
    assert!(
        cancelled.elapsed() < STOPS_WITHIN,
        "{:?}",
        cancelled.elapsed()
    );
    // Cancelled while it ran: the stop, with what the closure returned (its own `Cancelled`).
    let err = answer.expect_err("cancelled while it ran");
    assert_eq!(err.cancel_reason(), Some(CancelReason::Timeout));
    let returned = err.into_returned().expect("the closure ran, and returned");
    assert_eq!(
        returned.expect_err("it never ends by itself").reason(),
        CancelReason::Timeout
    );
    assert_eq!(
        items_run(&done, Duration::from_millis(200)),
        0,
        "every worker stopped"
    );

    let asked = Instant::now();
    let next = tethered::spawn(JobOptions::new().on(RayonSpawner), |token| {
        digest(1_000, &token, &AtomicU64::new(0))
    })
    .unwrap();
    let serial = (0..1_000).map(work).fold(0, u64::wrapping_add);
    assert_eq!(next.await.unwrap().unwrap(), serial);
    assert!(asked.elapsed() < STOPS_WITHIN, "{:?}", asked.elapsed());
}
