//! CPU-bound work on rayon's pool, tethered to the request that wants it. A `Spawner` over
//! `rayon::spawn` starts the job on a rayon worker (`JobOptions::on`), and a deadline
//! (`cancel_after`) cancels it; its `par_iter` checks the job's token at every item
//! (`try_for_each` with `token.check()`), so a cancel stops every rayon worker at its next item,
//! and the pool is free for the next request at once.
//!
//! Run with: cargo run --example rayon_pool

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use tethered::{
    AbortableNative, CancelReason, CancelToken, Cancelled, JobOptions, NativeError, Tethered,
};
use tethered::{Runnable, SpawnError, Spawner};

/// How long a request may take.
const DEADLINE: Duration = Duration::from_millis(200);

/// Runs each job on rayon's global pool; the job's own `par_iter` then runs on the same pool.
/// (For a pool of your own, hold an `Arc<rayon::ThreadPool>` and call its `spawn`.)
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RayonSpawner;

impl Spawner for RayonSpawner {
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
        rayon::spawn(move || task.run());
        Ok(())
    }
}

/// One item's work: a few microseconds of arithmetic.
pub(crate) fn work(item: u64) -> u64 {
    let mut x = item.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    for _ in 0..2_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

/// The digest of `work` over `0..items`, in parallel on the current rayon pool; every item
/// first checks `token` (one atomic load), so a cancel ends the whole `par_iter` at each
/// worker's next item. `done` counts the items that ran.
pub(crate) fn digest(items: u64, token: &CancelToken, done: &AtomicU64) -> Result<u64, Cancelled> {
    let digest = AtomicU64::new(0);
    (0..items).into_par_iter().try_for_each(|item| {
        token.check()?;
        // ORDERING: Relaxed; the values are read after the join, which synchronises.
        digest.fetch_add(work(item), Ordering::Relaxed); // wraps
        done.fetch_add(1, Ordering::Relaxed);
        Ok(())
    })?;
    Ok(digest.into_inner())
}

/// Starts the digest of `0..items` on rayon's pool through [`RayonSpawner`], with [`DEADLINE`]:
/// `cancel_after` cancels the job with `Timeout` once the deadline has passed, and every worker
/// stops at its next item. `done` counts the items that ran.
fn request(
    items: u64,
    done: Arc<AtomicU64>,
) -> Result<AbortableNative<Result<u64, Cancelled>>, Box<dyn std::error::Error>> {
    let job = tethered::spawn(JobOptions::new().on(RayonSpawner), move |token| {
        digest(items, &token, &done)
    })?;
    job.cancel_after(DEADLINE)?;
    Ok(job)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!(
        "rayon's global pool: {} workers; each request with a {DEADLINE:?} deadline",
        rayon::current_num_threads()
    );

    let done = Arc::new(AtomicU64::new(0));
    let big = 1_000_000_000;
    let job = request(big, done.clone())?;
    let token = job.token().clone();
    // Awaiting the job waits until its closure has returned, after the deadline stopped it.
    let answer = job.await;
    let deadline = token.deadline().ok_or("the job has a deadline")?;
    let cancel_to_return = deadline.elapsed();
    let err = match answer {
        Err(NativeError::Cancelled {
            reason: CancelReason::Timeout,
            returned: Some(returned),
            ..
        }) => match *returned {
            Err(err) => err,
            Ok(value) => {
                return Err(
                    format!("a billion items take far longer: finished with {value:?}").into(),
                );
            }
        },
        other => return Err(format!("a billion items take far longer: {other:?}").into()),
    };
    let ran = done.load(Ordering::Relaxed);
    println!("a request for {big} items: {err}, after {ran} items");
    println!("cancel to return: {cancel_to_return:.2?}");
    std::thread::sleep(Duration::from_millis(50));
    let after = done.load(Ordering::Relaxed) - ran;
    println!("items run after the return: {after}");

    let started = Instant::now();
    let small = 2_000;
    let answer = request(small, Arc::new(AtomicU64::new(0)))?.await;
    println!(
        "the next request, {small} items: digest {:#x} in {:.1?}",
        answer??,
        started.elapsed()
    );
    Ok(())
}
