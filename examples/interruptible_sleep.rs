//! Native code that waits between steps with `CancelToken::wait_timeout`: an interruptible
//! sleep. Two pollers check a resource every second; their caller gives up after 150 ms. The one
//! sleeping with `wait_timeout` returns the moment it is cancelled; the one sleeping with
//! `std::thread::sleep` sees its token only when its sleep is over, most of a second later.
//!
//! Run with: cargo run --example interruptible_sleep

use std::sync::mpsc;
use std::time::{Duration, Instant};

use tethered::CancelToken;

/// How long each poller waits between two looks at the resource.
const INTERVAL: Duration = Duration::from_secs(1);
/// How long the caller waits for the resource before it gives up.
const PATIENCE: Duration = Duration::from_millis(150);

/// Looks at a resource that never becomes ready, every [`INTERVAL`], until cancelled.
fn poll_resource(token: &CancelToken, sleep: impl Fn(&CancelToken)) -> u32 {
    let mut looks = 0;
    while !token.is_cancelled() {
        looks += 1; // "is the file there yet? no."
        sleep(token);
    }
    looks
}

#[tokio::main]
async fn main() {
    let (returned, returns) = mpsc::channel();
    let interruptible = {
        let returned = returned.clone();
        tethered_tokio::spawn_native(move |token| {
            // Wakes early when the token is cancelled; the reason it returns is unused here.
            poll_resource(&token, |token| {
                let _ = token.wait_timeout(INTERVAL);
            });
            let _ = returned.send(("wait_timeout", Instant::now()));
        })
    };
    let uninterruptible = tethered_tokio::spawn_native(move |token| {
        poll_resource(&token, |_| std::thread::sleep(INTERVAL));
        let _ = returned.send(("thread::sleep", Instant::now()));
    });

    println!("two pollers look at a resource every {INTERVAL:?}; the caller waits {PATIENCE:?}");
    let both = async { tokio::join!(interruptible, uninterruptible) };
    assert!(tokio::time::timeout(PATIENCE, both).await.is_err());
    let gave_up = Instant::now();
    println!("the caller gave up: both jobs are cancelled");

    // Each closure reports when it returned; wait for both off the async threads.
    let returns = tokio::task::spawn_blocking(move || {
        (0..2)
            .map(|_| {
                returns
                    .recv_timeout(INTERVAL * 3)
                    .expect("a poller returns")
            })
            .collect::<Vec<_>>()
    })
    .await
    .expect("the waiting thread does not panic");
    for (sleeper, at) in &returns {
        println!(
            "  sleeping with {sleeper:<13} it returned {:>9.1?} after the cancel",
            at.saturating_duration_since(gave_up)
        );
    }
    assert_eq!(
        returns[0].0, "wait_timeout",
        "the interruptible poller returns first"
    );
}
