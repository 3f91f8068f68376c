//! A native job cancelled by dropping the future that awaits it.
//!
//! A timeout drops the future that awaits a long computation on a native thread. With a plain
//! `spawn_blocking` the thread would spin on forever; here the drop cancels the job's token, the
//! computation sees it within one check, and the thread is free again.
//!
//! Run with: cargo run --example dropped_future

use std::time::{Duration, Instant};

use tethered::{AbortableNative, CancelReason, Tethered};

#[tokio::main]
async fn main() {
    let job = AbortableNative::spawn(|token| {
        // A long computation that checks its token every step: one atomic load.
        let mut steps: u64 = 0;
        while !token.is_cancelled() {
            steps = steps.wrapping_add(1);
            std::hint::black_box(steps);
        }
        (steps, token.reason())
    });
    let token = job.token().clone();

    println!("running a computation on a native thread, with a 200 ms timeout...");
    let started = Instant::now();
    let outcome = tokio::time::timeout(Duration::from_millis(200), job).await;
    assert!(outcome.is_err(), "the computation never ends by itself");
    println!(
        "timed out after {:?}: the awaiting future was dropped",
        started.elapsed()
    );

    // The drop reached the native thread: wait (without blocking the runtime) for proof.
    let reason = token.cancelled().await;
    assert_eq!(reason, CancelReason::Dropped);
    let deadline = Instant::now() + Duration::from_secs(5);
    while tethered::stats().running > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let stats = tethered::stats();
    println!("the job's token says: {reason}");
    println!(
        "native closures still running: {} (spawned {}, cancelled {})",
        stats.running, stats.spawned, stats.cancelled
    );
    assert_eq!(stats.running, 0, "the native thread stopped");
}
