//! 500 short-lived children, cancelled at random in every way a job can be: afterwards nothing
//! runs, no zombie is left, and the thread count is back where it started.
//!
//! Alone in its test binary, so the process-wide checks see only its own children and threads.

#![cfg(target_os = "linux")]

mod common;

use std::time::{Duration, Instant};

use common::{SLACK, sh, thread_count, wait_until, zombie_children};
use std::num::NonZeroUsize;
use tethered::{CancelReason, JobOptions, NativeError, NativeScope, Tethered};
use tethered_process::Process;

const CHILDREN: u64 = 500;
const AT_ONCE: usize = 16;

/// xorshift64*: a small, seeded, reproducible sequence.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

#[test]
fn five_hundred_children_cancelled_at_random_leave_nothing_behind() {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |since| since.as_nanos() as u64)
        | 1;
    println!("seed {seed}");
    let mut rng = Rng(seed);
    // The supervisor thread and the core's timer thread (behind every `timeout`) live as long
    // as the process: start both before counting threads.
    Process::new(common::sh("exit 0"))
        .spawn()
        .expect("sh starts")
        .join_blocking()
        .expect("it exits");
    let warm_up = tethered::CancelSource::new();
    warm_up
        .cancel_after(Duration::from_millis(1))
        .expect("the timer thread starts");
    warm_up.token().wait();
    let threads_before = thread_count();
    let running_before = tethered::stats().running;
    let started = Instant::now();

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    // A scope with two slots: waiters queue in it, and some are cancelled there (rescued).
    let scope =
        std::sync::Arc::new(NativeScope::new().with_max_running(NonZeroUsize::new(2).unwrap()));
    let mut fates = [0u32; 6];
    runtime.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..CHILDREN {
            if tasks.len() >= AT_ONCE {
                tasks.join_next().await;
            }
            let script = match rng.below(4) {
                0 => "exit 0",
                1 => "sleep 0.02",
                2 => "trap '' TERM; sleep 0.05",
                _ => "while :; do :; done",
            };
            let fate = rng.below(6) as usize;
            fates[fate] += 1;
            let delay = Duration::from_millis(rng.below(15));
            let process = Process::new(sh(script)).kill_after(Duration::from_millis(30));
            let scope = scope.clone();
            tasks.spawn(async move {
                match fate {
                    // Dropped at once.
                    0 => drop(process.spawn().expect("sh starts")),
                    // Dropped a little later.
                    1 => {
                        let job = process.spawn().expect("sh starts");
                        tokio::time::sleep(delay).await;
                        drop(job);
                    }
                    // Behind a timeout.
                    2 => {
                        let job = process.spawn().expect("sh starts");
                        let _ = job.timeout(delay).await;
                    }
                    // Cancelled and joined.
                    3 => {
                        let job = process.spawn().expect("sh starts");
                        tokio::time::sleep(delay).await;
                        // Reaped by itself first, or stopped by the cancel: an output either way.
                        match job.cancel_and_join_with(CancelReason::Timeout).await {
                            Ok(output) => assert!(output.ended.is_exited(), "{output:?}"),
                            Err(NativeError::Cancelled {
                                reason: CancelReason::Timeout,
                                returned: Some(_),
                                ..
                            }) => {}
                            Err(err) => panic!("no output after the cancel: {err:?}"),
                        }
                    }
                    // Dropped later, from another task.
                    4 => {
                        let job = process.spawn().expect("sh starts");
                        tokio::time::sleep(delay).await;
                        drop(job);
                    }
                    // Queued in a full scope, dropped later (maybe before its waiter ran).
                    _ => {
                        let job = process
                            .spawn_with(JobOptions::new().in_scope(&scope))
                            .expect("sh starts");
                        tokio::time::sleep(delay).await;
                        drop(job);
                    }
                }
            });
        }
        while tasks.join_next().await.is_some() {}
    });
    drop(runtime);
    drop(scope);
    println!(
        "fates (drop now, drop later, timeout, cancel-join, drop from a later task, scope): {fates:?}"
    );

    assert!(
        wait_until(SLACK + SLACK, || tethered::stats().running
            == running_before),
        "waiters still running: {:?}",
        tethered::stats()
    );
    assert!(
        wait_until(SLACK, || zombie_children().is_empty()),
        "zombies: {:?}",
        zombie_children()
    );
    assert!(
        wait_until(SLACK, || common::children().is_empty()),
        "children still there: {:?}",
        common::children()
    );
    assert!(
        wait_until(SLACK, || thread_count() <= threads_before),
        "{} threads now, {threads_before} before",
        thread_count()
    );
    println!("{CHILDREN} children in {:?}", started.elapsed());
}
