//! tethered on async-std in ten lines: a `spawn_blocking` job behind a timeout. At the deadline
//! the timeout cancels the job and answers at once (`Abandoned`: the closure still ran); the
//! closure stops at its next check, and hears why. (async-std is discontinued; new code should
//! use smol.)
//!
//! Run with: cargo run --example async_std_adapter

use std::time::Duration;

use tethered::{CancelReason, NativeError, Tethered};

fn main() {
    async_std::task::block_on(async {
        let job = tethered_async_std::spawn_native(|token| {
            let mut steps = 0u64;
            while !token.is_cancelled() {
                steps += 1; // blocking work, checking its token
            }
            steps
        });
        let token = job.token().clone();
        let result = job.timeout(Duration::from_millis(100)).await;
        // The timeout cancels the job and answers at once: `Abandoned` while the closure still
        // runs, or its own stop if it saw the cancel and returned first. Either way, `Timeout`.
        assert_eq!(
            result.as_ref().err().and_then(NativeError::cancel_reason),
            Some(CancelReason::Timeout)
        );
        println!(
            "async-std: timed out; the closure was told: {}",
            token.cancelled().await
        );
    });
}
