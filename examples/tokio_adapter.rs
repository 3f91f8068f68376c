//! tethered on tokio in ten lines: a job on tokio's blocking pool that stops when its timeout
//! fires, and hears why.
//!
//! Run with: cargo run --example tokio_adapter

use std::time::Duration;

use tethered::{CancelReason, NativeError};

#[tokio::main]
async fn main() {
    let job = tethered_tokio::spawn_native(|token| {
        let mut steps = 0u64;
        while !token.is_cancelled() {
            steps += 1; // blocking work, checking its token
        }
        steps
    });
    let token = job.token();
    let result = tethered_tokio::timeout(Duration::from_millis(100), job).await;
    assert!(matches!(
        result,
        Err(NativeError::Cancelled(CancelReason::Timeout))
    ));
    println!(
        "tokio: timed out; the closure was told: {}",
        token.cancelled().await
    );
}
