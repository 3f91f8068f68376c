//! Where a job runs when its options place it nowhere: a pool of as many threads as the machine
//! runs at once (`std::thread::available_parallelism`), started as jobs come and kept between
//! them (spinning a moment, then parked), shared by every environment of the addon.
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
//!  (not started) ──a job comes, fewer workers than the size──▶ Running
//!  Running ──queue empty──▶ Spinning ──a job comes──▶ Running
//!  Spinning ──SPIN passed, queue still empty──▶ Parked ──a job comes, told to wake──▶ Running
//!                                                          (workers never exit)
//! ```
//!
//! A worker whose queue ran dry watches it for [`SPIN`] (50 µs) before it parks, as the core's
//! thread cache does: the caller of a sequential loop (`for … { await add(…) }`) pushes its next
//! job within tens of microseconds of the last one's end, and a spinning worker takes it at
//! once, where a parked one would cost the call a wake-up. The price is at most [`SPIN`] of one
//! core after the last job of a burst; a pool with no jobs uses none.
//!
//! Every job pushed counts on one idle worker at most, and no two jobs on the same one: a job
//! claims a spinning worker nobody has claimed, else wakes a parked worker nobody has told to
//! wake, else starts a worker if the pool has room. A worker told to wake counts as parked, and
//! a claimed worker as spinning, until it has taken the lock again. Otherwise two jobs pushed at
//! once would both count on the one idle worker, and the second would wait behind the first's
//! whole run, with threads to spare. A claim may outlive its job (another worker took it): that
//! only wakes or starts one worker more than needed, never leaves a job waiting.

use std::collections::VecDeque;
use std::num::NonZeroUsize;
use std::time::Duration;

use tethered::__private::{PerProcess, SPIN};
use tethered::{
    AbortableNative, CancelToken, JobOptions, Placement, Runnable, SpawnError, Spawner,
};

use crate::sync::{self, AtomicUsize, Condvar, Mutex, Ordering};

/// Spawns `f` with `options`, on the pool when the options place it nowhere.
pub(crate) fn spawn<P, T, F>(options: JobOptions<P>, f: F) -> Result<AbortableNative<T>, SpawnError>
where
    P: Placement,
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    tethered::__private::spawn_or(options, || Ok(DefaultPool), f)
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
    /// How long a worker spins before it parks ([`SPIN`], or a test's own).
    spin: Duration,
    state: Mutex<Queue>,
    ready: Condvar,
    /// `state.tasks.len()`, written under the lock, read by spinning workers without it: a hint
    /// to take the lock, the queue itself says what is there.
    queued: AtomicUsize,
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
    /// Workers spinning, watching the queue before they park (claimed or not).
    spinning: usize,
    /// Spinning workers a pushed job counts on: at most `spinning`.
    claimed: usize,
}

impl Queue {
    /// Takes the first task, keeping the spinners' hint in step.
    fn pop(&mut self, queued: &AtomicUsize) -> Option<Runnable> {
        let task = self.tasks.pop_front()?;
        // Relaxed: a hint only; the lock held orders the queue itself.
        queued.store(self.tasks.len(), Ordering::Relaxed);
        Some(task)
    }
}

impl Pool {
    fn new() -> Pool {
        let size = std::thread::available_parallelism().map_or(4, NonZeroUsize::get);
        Pool::with(size, SPIN)
    }

    fn with(size: usize, spin: Duration) -> Pool {
        Pool {
            size,
            spin,
            state: Mutex::new(Queue {
                tasks: VecDeque::new(),
                workers: 0,
                parked: 0,
                waking: 0,
                spinning: 0,
                claimed: 0,
            }),
            ready: Condvar::new(),
            queued: AtomicUsize::new(0),
        }
    }

    fn push(&'static self, task: Runnable) -> Result<(), SpawnError> {
        let start_one = {
            let mut queue = sync::lock(&self.state);
            queue.tasks.push_back(task);
            // Relaxed: a hint only (see `queued`).
            self.queued.store(queue.tasks.len(), Ordering::Relaxed);
            if queue.spinning > queue.claimed {
                // A spinning worker nobody counts on yet sees it in the queue.
                queue.claimed += 1;
                false
            } else if queue.parked > queue.waking {
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
                    self.queued.store(queue.tasks.len(), Ordering::Relaxed);
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
                    if let Some(task) = queue.pop(&self.queued) {
                        break task;
                    }
                    queue.spinning += 1;
                    drop(queue);
                    // Relaxed: a hint only; the lock taken next says what is there.
                    tethered::__private::spin_until(self.spin, || {
                        self.queued.load(Ordering::Relaxed) > 0
                    });
                    queue = sync::lock(&self.state);
                    queue.spinning -= 1;
                    let task = queue.pop(&self.queued);
                    // The job taken used up a claim, if one was made; a claim left on a worker
                    // that goes is moved to the spinners left, or dropped with the last.
                    let claimed = queue.claimed.saturating_sub(usize::from(task.is_some()));
                    queue.claimed = claimed.min(queue.spinning);
                    if let Some(task) = task {
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
            if let Err(panic) = tethered::__private::catch_panic(move || task.run()) {
                tethered::__private::drop_contained(panic);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::mpsc;
    use std::time::Instant;

    use super::*;

    /// A test's own pool, as the addon's [`DefaultPool`] spawner hands jobs to the static one.
    #[derive(Clone, Copy)]
    struct On(&'static Pool);

    impl Spawner for On {
        fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
            self.0.push(task)
        }
    }

    fn count(pool: &Pool, what: fn(&Queue) -> usize) -> usize {
        what(&sync::lock(&pool.state))
    }

    /// Waits until `what` of `pool` reads `want`.
    fn wait_for(pool: &Pool, name: &str, what: fn(&Queue) -> usize, want: usize) {
        let until = Instant::now() + Duration::from_secs(5);
        while count(pool, what) != want {
            assert!(Instant::now() < until, "{name} never became {want}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Spawns two jobs on `pool` that run until cancelled, and waits until both have started.
    fn two_jobs_at_once(pool: &'static Pool) {
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

    /// Whether workers spin here: not on a machine that runs one thread at a time (see
    /// `tethered::__private::spin_until`), where these tests check that a worker parks at once.
    fn spins(pool: &Pool) -> bool {
        let cpus = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
        if cpus == 1 {
            wait_for(pool, "parked", |queue| queue.parked, 1);
            assert_eq!(count(pool, |queue| queue.spinning), 0);
        }
        cpus > 1
    }

    fn on_which_thread(pool: &'static Pool) -> std::thread::ThreadId {
        tethered::spawn(JobOptions::new().on(On(pool)), |_| {
            std::thread::current().id()
        })
        .unwrap()
        .join_blocking()
        .unwrap()
    }

    /// With one worker parked and room for more, two jobs pushed back to back both run at once:
    /// the second does not count on the worker the first woke.
    #[test]
    fn two_jobs_pushed_at_once_beside_one_parked_worker_both_run() {
        let pool: &'static Pool = Box::leak(Box::new(Pool::with(2, Duration::ZERO)));
        on_which_thread(pool);
        wait_for(pool, "parked", |queue| queue.parked, 1);
        two_jobs_at_once(pool);
    }

    /// The same with the worker spinning: the second job does not count on the spinner the
    /// first claimed.
    #[test]
    fn two_jobs_pushed_at_once_beside_one_spinning_worker_both_run() {
        let pool: &'static Pool = Box::leak(Box::new(Pool::with(2, Duration::from_secs(2))));
        on_which_thread(pool);
        if spins(pool) {
            wait_for(pool, "spinning", |queue| queue.spinning, 1);
        }
        two_jobs_at_once(pool);
    }

    /// A job pushed while a worker spins is run by that worker: no thread is started or woken.
    #[test]
    fn a_job_pushed_while_a_worker_spins_runs_on_it() {
        let pool: &'static Pool = Box::leak(Box::new(Pool::with(2, Duration::from_secs(2))));
        let first = on_which_thread(pool);
        if spins(pool) {
            wait_for(pool, "spinning", |queue| queue.spinning, 1);
        }
        assert_eq!(on_which_thread(pool), first);
        assert_eq!(
            count(pool, |queue| queue.workers),
            1,
            "a second worker was started"
        );
    }

    /// A worker spins for its `spin` only, then parks, and a job wakes it.
    #[test]
    fn a_spinning_worker_parks_after_its_spin_and_wakes_for_the_next_job() {
        let pool: &'static Pool = Box::leak(Box::new(Pool::with(1, Duration::from_millis(1))));
        let first = on_which_thread(pool);
        wait_for(pool, "parked", |queue| queue.parked, 1);
        assert_eq!(count(pool, |queue| queue.spinning), 0);
        assert_eq!(on_which_thread(pool), first);
    }
}
