//! Shutting down a group of native jobs with a deadline, and learning who did not make it.
//!
//! A `NativeScope` on tokio's blocking pool runs eight workers that poll their tokens and one
//! named job that is stuck in a call that ignores its token. `scope.shutdown(grace)` cancels
//! them all, waits up to the grace period, and reports the stuck job by name; the example then
//! releases it and waits until the scope is empty.
//!
//! Run with: cargo run --example scoped_shutdown

use std::sync::mpsc;
use std::time::Duration;

use tethered::{JobOptions, NativeScope};

const WORKERS: usize = 8;
const GRACE: Duration = Duration::from_millis(500);

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scope = NativeScope::with_spawner(tethered_tokio::TokioSpawner::current());
    let (started_tx, started) = mpsc::channel();

    for worker in 0..WORKERS {
        let started_tx = started_tx.clone();
        scope
            .spawn(move |token| {
                let _ = started_tx.send(());
                let mut batches = 0u64;
                while !token.is_cancelled() {
                    batches += 1; // one batch of work, then a look at the token
                    std::thread::sleep(Duration::from_millis(2));
                }
                (worker, batches)
            })?
            .detach(); // the scope keeps track of it
    }

    // A job stuck in a call that cannot be interrupted (a C library, a blocking read without a
    // timeout): it ignores its token until `release` lets it go.
    let (release, stuck) = mpsc::channel::<()>();
    let options = JobOptions::new().name("legacy-import").in_scope(&scope);
    tethered::spawn(options, move |_token| {
        let _ = started_tx.send(());
        let _ = stuck.recv();
    })?
    .detach();

    // Let every job start (a job cancelled before it starts is skipped, not stuck).
    let started = tokio::task::spawn_blocking(move || {
        (0..=WORKERS).all(|_| started.recv_timeout(Duration::from_secs(5)).is_ok())
    })
    .await?;
    assert!(started, "every job started");
    println!("{} jobs running in the scope", scope.len());

    let report = scope.shutdown(GRACE).await;
    println!("shutdown: {report}");
    assert_eq!(report.returned, WORKERS);
    let stuck_names: Vec<_> = report
        .stragglers
        .iter()
        .map(|s| s.name.as_deref())
        .collect();
    assert_eq!(stuck_names, [Some("legacy-import")]);
    println!(
        "detached after the shutdown: {} (the straggler runs on, counted)",
        tethered::stats().detached
    );

    release.send(())?;
    scope.wait_idle().await;
    println!(
        "released the straggler; jobs left in the scope: {}, detached: {}",
        scope.len(),
        tethered::stats().detached
    );
    assert!(scope.is_empty());
    Ok(())
}
