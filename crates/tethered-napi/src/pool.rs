//! Where a job runs when its options place it nowhere: a pool of as many threads as the machine
//! runs at once (`std::thread::available_parallelism`), started as jobs come and kept parked
//! between them, shared by every environment of the addon.
//!
//! A thread per job would let a burst of busy jobs outnumber the cores and starve the event
//! loop's own thread (200 busy jobs lagged it by up to 1.5 s); libuv's pool (4 threads, which
//! `fs`, `dns.lookup`, `crypto` and `zlib` share) would let long native jobs stall every file
//! read of the process. Jobs beyond the pool's size wait in its queue, first in, first out; a
//! queued job whose token is cancelled finishes at once and never runs.
//!
//! The pool is per process ([`PerProcess`]), like every process-wide thread of the family.
//!
//! # States of a worker
//!
//! ```text
//!  (not started) ──a job comes, fewer workers than the size──▶ Running ──queue empty──▶ Parked
//!  Parked ──a job comes, told to wake──▶ Running      (workers never exit)
//! ```
//!
//! A parked worker told to wake counts as parked until it has taken the lock again: the next
//! job must not count on it too (two jobs pushed at once would both wake the one parked worker,
//! and the second would wait behind the first's whole run, with threads to spare).

use std::collections::VecDeque;
use std::num::NonZeroUsize;

use tethered::bridge::PerProcess;
use tethered::{
    AbortableNative, CancelToken, JobOptions, Placement, Runnable, SpawnError, Spawner,
};

use crate::sync::{self, Condvar, Mutex};

/// Spawns `f` with `options`, on the pool when the options place it nowhere.
pub(crate) fn spawn<P, T, F>(options: JobOptions<P>, f: F) -> Result<AbortableNative<T>, SpawnError>
where
    P: Placement,
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    tethered::bridge::spawn_or(options, || Ok(DefaultPool), f)
}

/// How many threads the pool runs at most.
pub(crate) fn size() -> usize {
    POOL.get().size
}

static POOL: PerProcess<Pool> = PerProcess::new(Pool::new);

/// The [`Spawner`] of the default pool.
#[derive(Clone, Copy, Debug)]
struct DefaultPool;

impl Spawner for DefaultPool {
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
        POOL.get().push(task)
    }
}

struct Pool {
    size: usize,
    state: Mutex<Queue>,
    ready: Condvar,
}

struct Queue {
    tasks: VecDeque<Runnable>,
    /// Workers started.
    workers: usize,
    /// Workers parked, waiting for a task (including those told to wake that have not yet
    /// taken the lock again).
    parked: usize,
    /// Parked workers told to wake (one per job pushed for them), not yet awake: at most
    /// `parked`, or fewer after a spurious wake-up (which then only wakes one more than needed).
    waking: usize,
}

impl Pool {
    fn new() -> Pool {
        Pool::with_size(std::thread::available_parallelism().map_or(4, NonZeroUsize::get))
    }

    fn with_size(size: usize) -> Pool {
        Pool {
            size,
            state: Mutex::new(Queue {
                tasks: VecDeque::new(),
                workers: 0,
                parked: 0,
                waking: 0,
            }),
            ready: Condvar::new(),
        }
    }

    fn push(&'static self, task: Runnable) -> Result<(), SpawnError> {
        let start_one = {
            let mut queue = sync::lock(&self.state);
            queue.tasks.push_back(task);
            if queue.parked > queue.waking {
                // A parked worker nobody has woken yet takes it.
                queue.waking += 1;
                self.ready.notify_one();
                false
            } else if queue.workers < self.size {
                queue.workers += 1;
                true
            } else {
                false
            }
        };
        if start_one {
            let started = std::thread::Builder::new()
                .name("tethered-napi".into())
                .spawn(move || self.work());
            if let Err(err) = started {
                let mut queue = sync::lock(&self.state);
                queue.workers -= 1;
                if queue.workers == 0 {
                    // Nobody would ever run it: hand it back as refused (the core finishes it).
                    let task = queue.tasks.pop_back();
                    drop(queue);
                    drop(task);
                    return Err(SpawnError::Thread(err));
                }
            }
        }
        Ok(())
    }

    fn work(&'static self) {
        loop {
            let task = {
                let mut queue = sync::lock(&self.state);
                loop {
                    if let Some(task) = queue.tasks.pop_front() {
                        break task;
                    }
                    queue.parked += 1;
                    queue = self
                        .ready
                        .wait(queue)
                        .unwrap_or_else(|poisoned| poisoned.into_inner());
                    queue.parked -= 1;
                    queue.waking = queue.waking.saturating_sub(1);
                }
            };
            // The core catches a closure's panic (or aborts, by the job's policy); anything
            // else that unwinds is contained so that the worker lives on.
            if let Err(panic) = tethered::bridge::catch_panic(move || task.run()) {
                tethered::bridge::drop_contained(panic);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    use super::*;

    /// A test's own pool, as the addon's [`DefaultPool`] spawner hands jobs to the static one.
    #[derive(Clone, Copy)]
    struct On(&'static Pool);

    impl Spawner for On {
        fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
            self.0.push(task)
        }
    }

    fn parked(pool: &Pool) -> usize {
        sync::lock(&pool.state).parked
    }

    /// With one worker parked and room for more, two jobs pushed back to back both run at once:
    /// the second does not count on the worker the first woke.
    #[test]
    fn two_jobs_pushed_at_once_beside_one_parked_worker_both_run() {
        let pool: &'static Pool = Box::leak(Box::new(Pool::with_size(2)));
        let first = tethered::spawn(JobOptions::new().on(On(pool)), |_| ()).unwrap();
        first.join_blocking().unwrap();
        let until = Instant::now() + Duration::from_secs(5);
        while parked(pool) == 0 {
            assert!(Instant::now() < until, "the first worker never parked");
            std::thread::sleep(Duration::from_millis(1));
        }
        let (started, starts) = mpsc::channel();
        let jobs: Vec<_> = (0..2)
            .map(|_| {
                let started = started.clone();
                tethered::spawn(JobOptions::new().on(On(pool)), move |token| {
                    started.send(()).unwrap();
                    // Runs until cancelled: the other job can only run beside it.
                    token.wait_timeout(Duration::from_secs(30));
                })
                .unwrap()
            })
            .collect();
        for _ in 0..2 {
            starts
                .recv_timeout(Duration::from_secs(5))
                .expect("a job waited in the queue while the pool had room for it");
        }
        // Dropping a handle cancels its job.
        drop(jobs);
    }
}
