//! [`ThreadSpawner`], a thread per job at once, and its threads, kept for a while after their
//! job for the next job that would get the same thread.
//!
//! Starting a thread costs tens of microseconds (a `clone`, a stack mapped and unmapped), more
//! than a short job itself: a Python or JavaScript caller that awaits one small native call
//! after another paid it on every call. So a thread whose job returned waits up to
//! [`KEEP_ALIVE`] for another job, and a spawner hands its job to such a thread before it
//! starts a new one. Only a thread that a new thread could not be told apart from is reused: one
//! with the same name and stack size. [`std::thread::current`] reads the same name either way,
//! and nothing holds more threads at once than thread-per-job would; what a reused thread keeps
//! is its thread-locals.
//!
//! A thread named after its job ([`JobOptions::name`](crate::JobOptions::name)) is not kept:
//! job names are often unique (a request's id), and a thread waiting for a job of the same
//! name would wait for nothing.
//!
//! Each waiting thread has one [`Seat`], found through the cache's list of idle seats by name
//! and stack size, the most recently idle first (so the others reach their keep-alive and go).
//! At most [`max_idle`] threads of one name and stack size wait: a burst of jobs leaves no
//! more idle threads behind than that.
//! The thread watches its seat for `SPIN` (`spin.rs`) before it sleeps on it: the
//! next call of a caller awaiting one call after another comes within tens of microseconds,
//! and then costs no wake-up.
//!
//! # States of a seat
//!
//! ```text
//!  Waiting ──a spawner hands it a job──▶ Handed ──its thread takes the job──▶ (runs it) ──▶ Waiting
//!  Waiting ──the keep-alive passes──▶ Gone            (its thread ends; a spawner that
//!                                                      still finds the seat tries the next)
//! ```
//!
//! A seat is in the idle list exactly while its thread is between jobs; the spawner that
//! takes it out of the list is the only one that may hand it a job, and the thread that
//! finds its keep-alive over takes itself out, under the seat's lock: so a job handed to a
//! seat is always run, and a seat handed nothing never keeps its thread.
//!
//! The cache is per process (`PerProcess`): a forked child starts
//! its own, without its parent's threads. Under `--cfg tethered_loom` a `static` cannot hold
//! loom primitives, so the cache serves only the loom models (which make their own), and a
//! keep-alive there passes at once: every order of a hand-off against a thread leaving is
//! explored.

use std::collections::HashMap;
use std::time::Duration;
#[cfg(not(tethered_loom))]
use std::time::Instant;

#[cfg(not(tethered_loom))]
use crate::per_process::PerProcess;
use crate::spawn_error::SpawnError;
use crate::spawner::{Runnable, Spawner};
use crate::sync::{self, Arc, AtomicBool, Condvar, Mutex, Ordering};

/// Runs each job on a named `std` thread of its own: the runtime-agnostic [`Spawner`].
///
/// The thread is named after the job ([`JobOptions::name`](crate::JobOptions::name)), or else
/// after the spawner ([`ThreadSpawner::name`]), or else [`ThreadSpawner::DEFAULT_THREAD_NAME`].
///
/// Every job starts at once, however many run: none waits for another's thread. A thread whose
/// job returned waits a few seconds for another job that would get the same name and stack
/// size, and runs it instead of a new thread starting (a thread costs tens of microseconds to
/// start, more than a short job); at most four threads a core (and at least eight) of one name
/// and stack size wait so, and the others end as their jobs return. It spins for the first `SPIN` (`spin.rs`) of that
/// wait, then sleeps. So a job may find thread-locals an earlier job on its thread
/// left; a job that needs a pristine thread starts one itself (see [`Spawner`]'s example). A
/// thread named after its own job ([`JobOptions::name`](crate::JobOptions::name)) is not kept:
/// job names are often unique. Idle threads end by themselves and never keep the process
/// alive.
///
/// ```
/// use tethered::{JobOptions, ThreadSpawner};
///
/// let spawner = ThreadSpawner::new().name("sandbox");
/// let job = tethered::spawn(JobOptions::new().on(spawner), |_token| {
///     std::thread::current().name().map(str::to_owned)
/// })
/// .unwrap();
/// assert_eq!(job.join_blocking().unwrap().as_deref(), Some("sandbox"));
/// ```
#[derive(Clone, Debug, Default)]
pub struct ThreadSpawner {
    name: Option<Arc<str>>,
    stack_size: Option<usize>,
}

impl ThreadSpawner {
    /// The name its threads get when none is set.
    pub const DEFAULT_THREAD_NAME: &'static str = "tethered-native";

    /// A spawner with default thread names ([`DEFAULT_THREAD_NAME`](Self::DEFAULT_THREAD_NAME))
    /// and the default stack size.
    pub fn new() -> Self {
        ThreadSpawner::default()
    }

    /// Names the threads it starts.
    pub fn name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Sets the stack size of the threads it starts, in bytes.
    pub fn stack_size(mut self, bytes: usize) -> Self {
        self.stack_size = Some(bytes);
        self
    }
}

impl Spawner for ThreadSpawner {
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
        // A thread named after its job is not kept (job names are often unique); one named
        // after the spawner is. Only the job's own name needs copying: `task` moves on.
        let job_name = task.name().map(str::to_owned);
        let (name, keep) = match &job_name {
            Some(name) => (name.as_str(), false),
            None => (
                self.name.as_deref().unwrap_or(Self::DEFAULT_THREAD_NAME),
                true,
            ),
        };
        #[cfg(not(tethered_loom))]
        {
            // Fork-safe: a forked child's first job starts its own cache, empty.
            static CACHE: PerProcess<Arc<ThreadCache>> =
                PerProcess::new(|| Arc::new(ThreadCache::new()));
            CACHE.get().spawn(name, self.stack_size, keep, task)
        }
        // Under loom a `static` cannot hold loom primitives: a thread per job, none kept (the
        // cache is modelled on its own, in `loom-tests/tests/thread_cache.rs`).
        #[cfg(tethered_loom)]
        {
            let _ = keep;
            start_thread(name, self.stack_size, move || task.run())
        }
    }
}

/// How long a thread waits for another job after its own.
#[cfg(not(tethered_loom))]
pub(crate) const KEEP_ALIVE: Duration = Duration::from_secs(5);

/// How many threads of one name and stack size wait for a job at most: four per core the
/// machine runs at once, and at least eight. A thread whose job returned when that many wait
/// already ends instead. A burst of many jobs at once (a thousand gathered Python calls) so
/// leaves no more idle threads behind than a loop of calls at the machine's parallelism can
/// use, each holding its stack and its interpreter's thread state (about 25 KiB measured under
/// CPython) for the keep-alive.
pub(crate) fn max_idle() -> usize {
    (4 * sync::parallelism()).max(8)
}

/// Idle threads, by stack size (`None`: the default) and name.
pub(crate) struct ThreadCache {
    idle: Mutex<HashMap<Option<usize>, ByName>>,
}

/// The seats of the idle threads of one stack size, by name, the most recently idle last.
type ByName = HashMap<Arc<str>, Vec<Arc<Seat>>>;

/// Where a thread between jobs waits for the next one: it watches [`Seat::ready`] for
/// `SPIN` (`spin.rs`), then sleeps on [`Seat::handed`].
struct Seat {
    state: Mutex<SeatLock>,
    handed: Condvar,
    /// Whether `state` holds a job: written under the lock, read without it by the thread's
    /// spin. A hint only; what the lock guards decides.
    ready: AtomicBool,
}

/// What a seat's lock guards.
struct SeatLock {
    state: SeatState,
    /// Whether the thread sleeps on the condition variable (no notify otherwise: it would be a
    /// system call for nobody).
    asleep: bool,
}

enum SeatState {
    /// In the idle list, its thread waiting.
    Waiting,
    /// Taken out of the list by a spawner, which left this job for its thread.
    Handed(Runnable),
    /// Its thread found the keep-alive over and ends.
    Gone,
}

impl ThreadCache {
    /// A cache with no thread yet.
    pub(crate) fn new() -> Self {
        ThreadCache {
            idle: Mutex::new(HashMap::new()),
        }
    }

    /// Runs `task` on an idle thread called `name` with `stack_size`, or on a new one, which
    /// waits for the next such job once `task` returned if `keep`, else ends.
    ///
    /// # Errors
    ///
    /// [`SpawnError::Thread`] if a new thread was needed and the OS refused it.
    pub(crate) fn spawn(
        self: &Arc<Self>,
        name: &str,
        stack_size: Option<usize>,
        keep: bool,
        task: Runnable,
    ) -> Result<(), SpawnError> {
        let mut task = task;
        if keep {
            while let Some(seat) = self.take_idle(name, stack_size) {
                match seat.hand(task) {
                    Ok(()) => return Ok(()),
                    // Its thread is leaving: the next seat, or a new thread.
                    Err(refused) => task = refused,
                }
            }
        }
        let cache = keep.then(|| (Arc::clone(self), Arc::<str>::from(name)));
        start_thread(name, stack_size, move || {
            task.run();
            if let Some((cache, name)) = cache {
                cache.serve(&name, stack_size);
            }
        })
    }

    /// The most recently idle seat of a thread called `name` with `stack_size`, out of the list.
    fn take_idle(&self, name: &str, stack_size: Option<usize>) -> Option<Arc<Seat>> {
        let mut idle = sync::lock(&self.idle);
        let by_name = idle.get_mut(&stack_size)?;
        let seats = by_name.get_mut(name)?;
        let seat = seats.pop();
        if seats.is_empty() {
            by_name.remove(name);
        }
        if by_name.is_empty() {
            idle.remove(&stack_size);
        }
        seat
    }

    /// A thread's life after its first job: waits for the next job, runs it, and again, until
    /// the keep-alive passes with nothing handed to it.
    fn serve(&self, name: &Arc<str>, stack_size: Option<usize>) {
        let seat = Arc::new(Seat {
            state: Mutex::new(SeatLock {
                state: SeatState::Waiting,
                asleep: false,
            }),
            handed: Condvar::new(),
            ready: AtomicBool::new(false),
        });
        loop {
            {
                let mut idle = sync::lock(&self.idle);
                let seats = idle
                    .entry(stack_size)
                    .or_default()
                    .entry(Arc::clone(name))
                    .or_default();
                if seats.len() >= max_idle() {
                    // Enough wait already: this thread ends (its entry stays for them).
                    return;
                }
                seats.push(Arc::clone(&seat));
            }
            match seat.wait() {
                Some(task) => task.run(),
                None => {
                    self.forget(&seat, name, stack_size);
                    return;
                }
            }
        }
    }

    /// Takes a seat whose thread is leaving out of the list, if no spawner has yet.
    fn forget(&self, seat: &Arc<Seat>, name: &str, stack_size: Option<usize>) {
        let mut idle = sync::lock(&self.idle);
        let Some(by_name) = idle.get_mut(&stack_size) else {
            return;
        };
        let Some(seats) = by_name.get_mut(name) else {
            return;
        };
        seats.retain(|other| !Arc::ptr_eq(other, seat));
        if seats.is_empty() {
            by_name.remove(name);
        }
        if by_name.is_empty() {
            idle.remove(&stack_size);
        }
    }

    /// How many threads wait for a job now.
    #[cfg(any(test, tethered_loom))]
    pub(crate) fn idle(&self) -> usize {
        sync::lock(&self.idle)
            .values()
            .flat_map(HashMap::values)
            .map(Vec::len)
            .sum()
    }
}

/// Starts a detached thread called `name` with `stack_size` that runs `body`.
///
/// # Errors
///
/// [`SpawnError::Thread`] if the OS refused the thread (`body` is dropped then).
pub(crate) fn start_thread(
    name: &str,
    stack_size: Option<usize>,
    body: impl FnOnce() + Send + 'static,
) -> Result<(), SpawnError> {
    let mut builder = sync::thread::Builder::new().name(name.to_owned());
    if let Some(bytes) = stack_size {
        builder = builder.stack_size(bytes);
    }
    // Dropping the `JoinHandle` detaches the thread; the job's handle is how callers join.
    builder.spawn(body).map(drop).map_err(SpawnError::Thread)
}

impl Seat {
    /// Leaves `task` for this seat's thread, or gives it back if the thread is leaving.
    fn hand(&self, task: Runnable) -> Result<(), Runnable> {
        let mut seat = sync::lock(&self.state);
        match seat.state {
            SeatState::Waiting => {
                seat.state = SeatState::Handed(task);
                // ORDERING: Relaxed: a hint for the spinning thread, which takes the lock
                // before it looks at the job; the lock orders the job's hand-over.
                self.ready.store(true, Ordering::Relaxed);
                if seat.asleep {
                    self.handed.notify_one();
                }
                Ok(())
            }
            // The fault the loom model's negative control puts back: a job left for a thread
            // that has left is never run.
            #[cfg(tethered_loom)]
            SeatState::Gone if crate::fault::put_back("thread_cache_hand_to_gone") => {
                seat.state = SeatState::Handed(task);
                Ok(())
            }
            // Taken out of the list by one spawner only: never handed twice.
            SeatState::Handed(_) | SeatState::Gone => Err(task),
        }
    }

    /// The job handed to this seat, or `None` (the seat is then `Gone`) once the keep-alive
    /// passed without one.
    fn wait(&self) -> Option<Runnable> {
        // Not under loom: a model would branch on every load of the spin. What it models is
        // the hand-over under the lock below, which decides.
        #[cfg(not(tethered_loom))]
        // ORDERING: Relaxed: a hint (see `hand`).
        crate::spin::spin_until(crate::spin::SPIN, || self.ready.load(Ordering::Relaxed));
        let mut seat = sync::lock(&self.state);
        #[cfg(not(tethered_loom))]
        let until = Instant::now() + KEEP_ALIVE;
        loop {
            if let SeatState::Handed(_) = seat.state {
                let SeatState::Handed(task) =
                    std::mem::replace(&mut seat.state, SeatState::Waiting)
                else {
                    unreachable!("matched just above");
                };
                // ORDERING: Relaxed: a hint, written under the lock as in `hand`.
                self.ready.store(false, Ordering::Relaxed);
                return Some(task);
            }
            #[cfg(not(tethered_loom))]
            let left = until.saturating_duration_since(Instant::now());
            // Under loom the keep-alive passes at once (loom's condvar never times out).
            #[cfg(tethered_loom)]
            let left = Duration::ZERO;
            if left.is_zero() {
                seat.state = SeatState::Gone;
                return None;
            }
            seat.asleep = true;
            seat = self
                .handed
                .wait_timeout(seat, left)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
            seat.asleep = false;
        }
    }
}

#[cfg(all(test, not(tethered_loom)))]
mod tests {
    use std::sync::mpsc;

    use super::*;
    use crate::{JobOptions, Spawner};

    /// Hands jobs to a test's own cache.
    struct On(Arc<ThreadCache>, &'static str);

    impl Spawner for On {
        fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
            self.0.spawn(self.1, None, true, task)
        }
    }

    fn thread_of(cache: &Arc<ThreadCache>, name: &'static str) -> std::thread::ThreadId {
        crate::spawn(JobOptions::new().on(On(Arc::clone(cache), name)), |_| {
            std::thread::current().id()
        })
        .unwrap()
        .join_blocking()
        .unwrap()
    }

    fn wait_idle(cache: &ThreadCache, count: usize) {
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while cache.idle() != count {
            assert!(
                std::time::Instant::now() < until,
                "{} idle, not {count}",
                cache.idle()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn a_thread_runs_the_next_job_of_its_name_and_no_other() {
        let cache = Arc::new(ThreadCache::new());
        let first = thread_of(&cache, "render");
        wait_idle(&cache, 1);
        assert_eq!(
            thread_of(&cache, "render"),
            first,
            "the idle thread was not reused"
        );
        wait_idle(&cache, 1);
        // Another name gets a thread of its own (which `current().name()` tells apart).
        assert_ne!(thread_of(&cache, "encode"), first);
        wait_idle(&cache, 2);
    }

    /// Whether the thread of the one idle seat called `name` sleeps (the seat stays listed).
    fn asleep(cache: &ThreadCache, name: &str) -> bool {
        let idle = sync::lock(&cache.idle);
        let seat = &idle[&None][name][0];
        sync::lock(&seat.state).asleep
    }

    /// A thread between jobs spins before it sleeps; a job handed to it while it spins runs
    /// without a wake-up, and a job handed once it sleeps wakes it at once (not at the end of
    /// its keep-alive).
    #[test]
    fn a_waiting_thread_spins_then_sleeps_and_a_job_reaches_it_either_way() {
        let cache = Arc::new(ThreadCache::new());
        let first = thread_of(&cache, "spin");
        wait_idle(&cache, 1);
        let until = std::time::Instant::now() + Duration::from_secs(5);
        while !asleep(&cache, "spin") {
            assert!(
                std::time::Instant::now() < until,
                "the thread never went to sleep"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let handed = std::time::Instant::now();
        assert_eq!(thread_of(&cache, "spin"), first);
        assert!(
            handed.elapsed() < Duration::from_secs(2),
            "the sleeping thread was not woken: it ran the job after {:?}",
            handed.elapsed()
        );
        // Handed as soon as the thread is listed again, the next job finds it spinning (or, on
        // a slow machine, asleep): the same thread runs it either way. (A job's handle is done
        // when the job's result is in, a little before its thread is listed again.)
        wait_idle(&cache, 1);
        assert_eq!(thread_of(&cache, "spin"), first);
    }

    #[test]
    fn a_thread_not_kept_ends_with_its_job() {
        let cache = Arc::new(ThreadCache::new());
        let job = crate::spawn(JobOptions::new().on(Once(Arc::clone(&cache))), |_| ()).unwrap();
        job.join_blocking().unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(
            cache.idle(),
            0,
            "a thread that was not to be kept waits for a job"
        );
    }

    /// Hands jobs to a test's own cache, not to be kept.
    struct Once(Arc<ThreadCache>);

    impl Spawner for Once {
        fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
            self.0.spawn("once", None, false, task)
        }
    }

    #[test]
    fn an_idle_thread_ends_once_its_keep_alive_passed() {
        let cache = Arc::new(ThreadCache::new());
        thread_of(&cache, "brief");
        wait_idle(&cache, 1);
        let until = std::time::Instant::now() + KEEP_ALIVE + Duration::from_secs(10);
        while cache.idle() > 0 {
            assert!(
                std::time::Instant::now() < until,
                "an idle thread outlived its keep-alive"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        // Its seat left the list with it: the next job gets a new thread, which runs it.
        thread_of(&cache, "brief");
        assert!(
            sync::lock(&cache.idle).len() <= 1,
            "the emptied lists were kept"
        );
    }

    #[test]
    fn jobs_at_once_each_get_a_thread() {
        let cache = Arc::new(ThreadCache::new());
        let (started, starts) = mpsc::channel();
        let jobs: Vec<_> = (0..4)
            .map(|_| {
                let started = started.clone();
                crate::spawn(
                    JobOptions::new().on(On(Arc::clone(&cache), "job")),
                    move |token| {
                        started.send(std::thread::current().id()).unwrap();
                        token.wait_timeout(Duration::from_secs(30));
                    },
                )
                .unwrap()
            })
            .collect();
        let mut threads: Vec<_> = (0..4)
            .map(|_| {
                starts
                    .recv_timeout(Duration::from_secs(5))
                    .expect("a job waited")
            })
            .collect();
        threads.sort_unstable_by_key(|id| format!("{id:?}"));
        threads.dedup();
        assert_eq!(threads.len(), 4);
        drop(jobs);
        wait_idle(&cache, 4);
    }

    /// A burst of more jobs than `max_idle` leaves `max_idle` threads waiting, no more: each
    /// idle thread holds its stack (and, under a language bridge, an interpreter's thread
    /// state) for the keep-alive.
    #[test]
    fn a_burst_leaves_at_most_max_idle_threads_waiting() {
        let cache = Arc::new(ThreadCache::new());
        let burst = 3 * max_idle();
        let release = Arc::new(std::sync::Barrier::new(burst + 1));
        let jobs: Vec<_> = (0..burst)
            .map(|_| {
                let release = Arc::clone(&release);
                crate::spawn(
                    JobOptions::new().on(On(Arc::clone(&cache), "burst")),
                    move |_| {
                        release.wait();
                    },
                )
                .unwrap()
            })
            .collect();
        release.wait();
        for job in jobs {
            job.join_blocking().unwrap();
        }
        wait_idle(&cache, max_idle());
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(cache.idle(), max_idle(), "more threads wait than the cap");
        // They still serve: the next job runs on one of them.
        let before = cache.idle();
        thread_of(&cache, "burst");
        wait_idle(&cache, before);
    }
}
