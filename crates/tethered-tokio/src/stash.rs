//! The `JoinHandle`s of the blocking tasks a thread spawned, kept on that thread until their
//! tasks finish, so that the thread that allocated a task is the one that frees it.
//!
//! A tokio task's memory is freed by whoever lets go of it last. [`TokioSpawner`] needs no
//! `JoinHandle` (a job's result reaches its `AbortableNative` directly), and dropping it at once
//! made the pool thread the task's last holder: it then freed, on its own thread, memory that
//! the spawning thread had allocated. glibc's allocator takes such a free into the spawning
//! thread's arena under that arena's lock, and the spawning thread's next allocations sort and
//! merge what piled up there. With 2,000 jobs spawned at once, that was about half of what a
//! tethered job cost beyond a bare `spawn_blocking`: in `concurrent_paired`, tethered /
//! `spawn_blocking` went from 1.11–1.15 to 1.07–1.08. `against.py --concurrent`, against the
//! tree that dropped the handles at once, read 0.94–0.97x for a first version of this file and
//! 0.98–0.99x for this one an hour later; the two versions read 0.999–1.006x against each
//! other, so the spread is the machine's. (Its two trees share one process and one allocator,
//! which may make it read less than `concurrent_paired` does.)
//!
//! So the spawning thread keeps each handle, and lets go of finished ones in sweeps on its
//! later spawns: after [`SWEEP_EVERY`] spawns, or after as many as the last sweep kept
//! unfinished, whichever is more, so that sweeping costs a spawn no more than a constant on
//! average. The sweeps are spaced out on purpose: a task counts as finished a moment before
//! the pool thread lets go of it, and a handle dropped in that moment leaves the free to the
//! pool thread again. A thread keeps at most [`MAX_KEPT`] handles; past that, a new one is let
//! go of at once. The list is rebuilt at each sweep, so its memory shrinks back after a burst.
//!
//! A thread lets go of finished tasks only when it spawns again, or when it exits (its
//! thread-locals are dropped): a thread that spawned a burst and never spawns again keeps what
//! it kept until then, at most `MAX_KEPT` tasks (about 1 MiB of tokio's task memory). With
//! tokio's `test-util` feature a blocking task holds its runtime's `Handle`, so a kept one
//! keeps that runtime's driver allocated until it is let go of.
//!
//! Nothing here changes what a job does: dropping a `JoinHandle` only detaches its task, which
//! is what `TokioSpawner` did at once before. A spawn from a thread whose thread-locals are
//! being destroyed lets go of its handle at once.
//!
//! [`TokioSpawner`]: crate::TokioSpawner

use std::cell::RefCell;

use tokio::task::JoinHandle;

/// The fewest spawns between two sweeps.
const SWEEP_EVERY: usize = 64;

/// The most handles one thread keeps.
const MAX_KEPT: usize = 4_096;

/// One thread's kept handles.
struct Stash {
    handles: Vec<JoinHandle<()>>,
    /// Spawns left until the next sweep.
    until_sweep: usize,
}

std::thread_local! {
    static STASH: RefCell<Stash> = const {
        RefCell::new(Stash {
            handles: Vec::new(),
            until_sweep: SWEEP_EVERY,
        })
    };
}

/// Keeps `join` on this thread until its task finishes, and lets go of finished ones.
pub(crate) fn keep(join: JoinHandle<()>) {
    let mut join = Some(join);
    // Nothing in `Stash::keep` runs user code, so the borrow is never re-entered.
    let let_go = STASH.try_with(|stash| stash.borrow_mut().keep(&mut join));
    // Whatever is let go of is dropped outside the borrow, contained: a task's last drop may
    // drop what its runtime's hooks captured, which is user code. `join` is still here if the
    // thread's locals are being destroyed or the thread keeps `MAX_KEPT` already.
    tethered::__private::drop_contained((let_go, join));
}

impl Stash {
    /// Returns what it lets go of, for the caller to drop once the stash is no longer
    /// borrowed.
    fn keep(&mut self, join: &mut Option<JoinHandle<()>>) -> Vec<JoinHandle<()>> {
        self.until_sweep = self.until_sweep.saturating_sub(1);
        let swept = if self.until_sweep == 0 {
            self.sweep()
        } else {
            Vec::new()
        };
        if self.handles.len() < MAX_KEPT {
            self.handles.extend(join.take());
        }
        swept
    }

    /// Takes out every handle whose task has finished.
    fn sweep(&mut self) -> Vec<JoinHandle<()>> {
        // Into a new list, in order: the old one's memory goes with it.
        let mut finished = Vec::new();
        let mut unfinished = Vec::new();
        for join in std::mem::take(&mut self.handles) {
            if join.is_finished() {
                finished.push(join);
            } else {
                unfinished.push(join);
            }
        }
        self.handles = unfinished;
        self.until_sweep = self.handles.len().max(SWEEP_EVERY);
        finished
    }
}

impl Drop for Stash {
    fn drop(&mut self) {
        // The thread exits: its kept handles go, contained (see `keep`).
        tethered::__private::drop_contained(std::mem::take(&mut self.handles));
    }
}

/// How many handles this thread keeps, and its spawns left until the next sweep.
#[cfg(test)]
fn kept() -> (usize, usize) {
    STASH.with(|stash| {
        let stash = stash.borrow();
        (stash.handles.len(), stash.until_sweep)
    })
}

#[cfg(test)]
mod tests {
    use super::{MAX_KEPT, STASH, SWEEP_EVERY, kept};
    use std::sync::mpsc;
    use std::time::Duration;
    use tethered::JobOptions;

    /// A runtime whose blocking pool has four threads, entered on this thread: jobs beyond
    /// four that are held wait in the pool's queue, unfinished.
    fn small_pool() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .max_blocking_threads(4)
            .build()
            .expect("a tokio runtime")
    }

    /// Jobs that come and go one at a time are let go of a sweep's worth at a time.
    #[test]
    fn a_thread_keeps_a_bounded_number_of_finished_handles() {
        on_a_fresh_thread(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("a tokio runtime");
            runtime.block_on(async {
                for i in 0..1_000u32 {
                    let job = crate::spawn_native(move |_token| i);
                    assert_eq!(job.await.expect("the job ran"), i);
                    // A task is marked complete a moment after its job's result arrives: a
                    // sweep may keep the last few.
                    let (kept, _) = kept();
                    assert!(
                        kept <= SWEEP_EVERY + 4,
                        "{kept} handles kept after {i} jobs"
                    );
                }
            });
        });
    }

    /// A held job does not keep the sweeps from letting go of the finished ones beside it.
    #[test]
    fn sweeps_let_go_of_finished_handles_behind_an_unfinished_one() {
        on_a_fresh_thread(|| {
            let runtime = small_pool();
            let _inside = runtime.enter();
            let (release_tx, release) = gate();
            let held = crate::spawn_native(move |_token| release.wait());
            for i in 0..1_000u32 {
                assert_eq!(
                    runtime
                        .block_on(crate::spawn_native(move |_token| i))
                        .expect("the job ran"),
                    i
                );
                let (kept, _) = kept();
                assert!(
                    kept <= SWEEP_EVERY + 5,
                    "{kept} handles kept after {i} jobs"
                );
            }
            release_tx.open();
            runtime.block_on(held).expect("the held job ran");
        });
    }

    /// Unfinished tasks are kept through a sweep, the next sweep waits as many spawns as
    /// were kept, and it lets go of those that finished meanwhile.
    #[test]
    fn unfinished_tasks_are_kept_and_sweeps_are_spaced_out() {
        on_a_fresh_thread(|| {
            let runtime = small_pool();
            let _inside = runtime.enter();
            let (release_tx, release) = gate();
            let held: Vec<_> = (0..100)
                .map(|_| {
                    let release = release.clone();
                    crate::spawn_native(move |_token| release.wait())
                })
                .collect();
            // The sweep at the 64th spawn kept all 64; the next one comes 64 spawns later.
            assert_eq!(kept(), (100, 2 * SWEEP_EVERY - 100));
            release_tx.open();
            for job in held {
                runtime.block_on(job).expect("the job ran");
            }
            let more: Vec<_> = (0..2 * SWEEP_EVERY - 100)
                .map(|_| crate::spawn_native(|_token| ()))
                .collect();
            // The sweep at the 128th spawn: only the new jobs, and the few held ones a pool
            // thread had not yet marked complete, may be left.
            let (kept, until_sweep) = kept();
            assert!(
                kept <= more.len() + 4,
                "{kept} handles kept after the sweep"
            );
            assert_eq!(until_sweep, SWEEP_EVERY);
            for job in more {
                runtime.block_on(job).expect("the job ran");
            }
        });
    }

    /// Past `MAX_KEPT`, a handle is let go of at once; every job still runs and gives its
    /// result. The list's memory shrinks back once the burst is swept.
    #[test]
    fn a_burst_beyond_the_limit_is_let_go_of_and_its_memory_given_back() {
        on_a_fresh_thread(|| {
            let runtime = small_pool();
            let _inside = runtime.enter();
            let (release_tx, release) = gate();
            let burst: Vec<_> = (0..MAX_KEPT as u32 + 100)
                .map(|i| {
                    let release = release.clone();
                    crate::spawn_native(move |_token| {
                        release.wait();
                        i
                    })
                })
                .collect();
            assert_eq!(kept().0, MAX_KEPT);
            let grown = STASH.with(|stash| stash.borrow().handles.capacity());
            release_tx.open();
            for (i, job) in (0..).zip(burst) {
                assert_eq!(runtime.block_on(job).expect("the job ran"), i);
            }
            // The sweep comes at most `MAX_KEPT` spawns later.
            for _ in 0..MAX_KEPT {
                runtime
                    .block_on(crate::spawn_native(|_token| ()))
                    .expect("the job ran");
            }
            let capacity = STASH.with(|stash| stash.borrow().handles.capacity());
            assert!(
                capacity <= 4 * SWEEP_EVERY,
                "capacity {capacity} after the burst was swept (it had grown to {grown})"
            );
        });
    }

    /// Runs `test` on a thread of its own, whose stash starts empty.
    fn on_a_fresh_thread(test: impl FnOnce() + Send + 'static) {
        std::thread::spawn(test)
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
    }

    /// A spawn from a thread whose thread-locals are being destroyed lets go of its handle at
    /// once; the job runs and gives its result all the same.
    #[test]
    fn a_spawn_while_thread_locals_are_destroyed_still_runs_its_job() {
        use std::cell::RefCell;

        struct SpawnsOnDrop {
            handle: tokio::runtime::Handle,
            result: mpsc::Sender<(bool, u32)>,
        }
        impl Drop for SpawnsOnDrop {
            fn drop(&mut self) {
                let stash_gone = STASH.try_with(|_| ()).is_err();
                let spawner = crate::TokioSpawner::new(self.handle.clone());
                let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |_token| 7u32)
                    .expect("the runtime runs");
                self.result
                    .send((stash_gone, job.join_blocking().expect("the job ran")))
                    .expect("the test waits");
            }
        }
        std::thread_local! {
            static SPAWNS_ON_DROP: RefCell<Option<SpawnsOnDrop>> = const { RefCell::new(None) };
        }

        let runtime = small_pool();
        let handle = runtime.handle().clone();
        let (result_tx, result) = mpsc::channel();
        std::thread::spawn(move || {
            // Registered before the stash is first used: thread-locals are destroyed in the
            // reverse order, so the stash is gone when this one spawns.
            SPAWNS_ON_DROP.with(|slot| {
                *slot.borrow_mut() = Some(SpawnsOnDrop {
                    handle: handle.clone(),
                    result: result_tx,
                })
            });
            let spawner = crate::TokioSpawner::new(handle);
            let job = tethered::spawn(JobOptions::new().on(spawner.clone()), |_token| 1u32)
                .expect("the runtime runs");
            assert_eq!(job.join_blocking().expect("the job ran"), 1);
        })
        .join()
        .expect("the thread and its thread-locals' drops did not panic");
        assert_eq!(
            result.recv_timeout(Duration::from_secs(10)),
            Ok((true, 7)),
            "(the stash was gone when the job was spawned, the job's result)"
        );
    }

    /// A gate that blocks its waiters until it is opened, and its opener, which also opens it
    /// when dropped: a failing assertion then lets the held jobs go, and the runtime's drop
    /// does not wait for them forever.
    fn gate() -> (Opener, Gate) {
        let gate = Gate(std::sync::Arc::new((
            std::sync::Mutex::new(false),
            std::sync::Condvar::new(),
        )));
        (Opener(gate.clone()), gate)
    }

    #[derive(Clone)]
    struct Gate(std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>);

    struct Opener(Gate);

    impl Opener {
        fn open(&self) {
            *self.0.0.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
            self.0.0.1.notify_all();
        }
    }

    impl Drop for Opener {
        fn drop(&mut self) {
            self.open();
        }
    }

    impl Gate {
        fn wait(&self) {
            let mut open = self.0.0.lock().unwrap_or_else(|e| e.into_inner());
            while !*open {
                open = self.0.1.wait(open).unwrap_or_else(|e| e.into_inner());
            }
        }
    }
}
