//! The `JoinHandle`s of the blocking tasks a thread spawned, kept on that thread until their
//! tasks finish, so that the thread that allocated a task is the one that frees it.
//!
//! A tokio task's memory is freed by whoever lets go of it last. [`TokioSpawner`] needs no
//! `JoinHandle` (a job's result reaches its `AbortableNative` directly), and dropping it at once
//! made the pool thread the task's last holder: it then freed, on its own thread, memory that
//! the spawning thread had allocated. glibc's allocator takes such a free into the spawning
//! thread's arena under that arena's lock, and the spawning thread's next allocations sort and
//! merge what piled up there. With 2,000 jobs spawned at once, that was about half of what a
//! tethered job cost beyond a bare `spawn_blocking`: `against.py --concurrent`, this tree
//! against the one that dropped the handles at once, read 0.94–0.97x in three runs of 300
//! batches, and tethered / `spawn_blocking` went from 1.12 to 1.07–1.08 in the same runs.
//!
//! So the spawning thread keeps each handle, and every so often drops those whose tasks have
//! finished ([`SWEEP_AT`], then twice as many as were left unfinished). What a thread keeps is
//! bounded: its unfinished tasks, and fewer finished ones than the larger of `SWEEP_AT` and
//! twice the unfinished ones at its last sweep; the list's own memory shrinks back after a
//! burst. Nothing here changes what a job does: a
//! dropped `JoinHandle` neither stops nor detaches a blocking task, it only lets go of it.
//! What a thread still keeps when it exits is dropped with its thread-locals; a spawn from a
//! thread whose thread-locals are being destroyed drops its handle at once, as before.
//!
//! [`TokioSpawner`]: crate::TokioSpawner

use std::cell::RefCell;

use tokio::task::JoinHandle;

/// Handles kept before the first sweep, and the fewest kept between two sweeps.
const SWEEP_AT: usize = 64;

/// One thread's kept handles.
struct Stash {
    handles: Vec<JoinHandle<()>>,
    /// The number of handles at which the next sweep runs.
    sweep_at: usize,
}

std::thread_local! {
    static STASH: RefCell<Stash> = const {
        RefCell::new(Stash {
            handles: Vec::new(),
            sweep_at: SWEEP_AT,
        })
    };
}

/// Keeps `join` on this thread until its task finishes.
pub(crate) fn keep(join: JoinHandle<()>) {
    let mut join = Some(join);
    let finished = STASH.try_with(|stash| {
        // Nothing below runs user code, so this borrow is never re-entered.
        let mut stash = stash.borrow_mut();
        stash.handles.extend(join.take());
        if stash.handles.len() < stash.sweep_at {
            return Vec::new();
        }
        let mut finished = Vec::new();
        let mut i = 0;
        while i < stash.handles.len() {
            if stash.handles[i].is_finished() {
                finished.push(stash.handles.swap_remove(i));
            } else {
                i += 1;
            }
        }
        stash.sweep_at = (2 * stash.handles.len()).max(SWEEP_AT);
        // After a burst (a million jobs spawned at once), give the list's memory back.
        if stash.handles.capacity() > 4 * stash.sweep_at {
            let sweep_at = stash.sweep_at;
            stash.handles.shrink_to(sweep_at);
        }
        finished
    });
    // The thread's locals are being destroyed: let go of it now, as tokio's own detach would.
    // A task's last drop may drop what a runtime's hooks captured (user code): contained, and
    // outside the borrow.
    tethered::drop_contained((finished, join));
}

/// How many handles this thread keeps.
#[cfg(test)]
fn kept() -> usize {
    STASH.with(|stash| stash.borrow().handles.len())
}

#[cfg(test)]
mod tests {
    use super::{STASH, SWEEP_AT, kept};
    use std::sync::mpsc;
    use std::time::Duration;

    /// What a thread keeps stays bounded as jobs come and go: without the sweeps it would keep
    /// one handle per job spawned.
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
                    assert!(kept() <= SWEEP_AT, "{} handles kept after {i} jobs", kept());
                }
            });
        });
    }

    /// After a burst, the list gives its memory back.
    #[test]
    fn the_list_shrinks_after_a_burst() {
        on_a_fresh_thread(|| {
            // Four pool threads: the jobs beyond them wait in the pool's queue, unfinished.
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .max_blocking_threads(4)
                .build()
                .expect("a tokio runtime");
            let _inside = runtime.enter();
            // Held until all are spawned, so that no sweep finds any finished.
            let (release_tx, release) = gate();
            let burst: Vec<_> = (0..2_000u32)
                .map(|i| {
                    let release = release.clone();
                    crate::spawn_native(move |_token| {
                        release.wait();
                        i
                    })
                })
                .collect();
            let grown = STASH.with(|stash| stash.borrow().handles.capacity());
            assert!(grown >= 2_000, "the list grew to {grown}");
            release_tx.open();
            for (i, job) in (0..).zip(burst) {
                assert_eq!(runtime.block_on(job).expect("the job ran"), i);
            }
            // Every task has finished: the sweeps that follow keep almost nothing.
            for _ in 0..2 * SWEEP_AT {
                runtime
                    .block_on(crate::spawn_native(|_token| ()))
                    .expect("the job ran");
            }
            let capacity = STASH.with(|stash| stash.borrow().handles.capacity());
            assert!(
                capacity <= 4 * SWEEP_AT,
                "capacity {capacity} after the burst (it had grown to {grown})"
            );
        });
    }

    /// Unfinished tasks are kept through a sweep, and swept once they have finished.
    #[test]
    fn unfinished_tasks_are_kept_until_they_finish() {
        on_a_fresh_thread(|| {
            // Four pool threads: the jobs beyond them wait in the pool's queue, unfinished.
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .max_blocking_threads(4)
                .build()
                .expect("a tokio runtime");
            let _inside = runtime.enter();
            let (release_tx, release) = gate();
            let held: Vec<_> = (0..100)
                .map(|_| {
                    let release = release.clone();
                    crate::spawn_native(move |_token| release.wait())
                })
                .collect();
            // 100 unfinished tasks: a sweep ran at 64 and kept them all.
            assert_eq!(kept(), 100);
            release_tx.open();
            for job in held {
                runtime.block_on(job).expect("the job ran");
            }
            // The next sweep runs at twice the unfinished tasks of the last one (128).
            let more: Vec<_> = (0..28).map(|_| crate::spawn_native(|_token| ())).collect();
            assert!(kept() <= 28, "{} handles kept after the sweep", kept());
            for job in more {
                runtime.block_on(job).expect("the job ran");
            }
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
            result: mpsc::Sender<u32>,
        }
        impl Drop for SpawnsOnDrop {
            fn drop(&mut self) {
                let spawner = crate::TokioSpawner::new(self.handle.clone());
                let job = tethered::Builder::new()
                    .spawn_on(&spawner, |_token| 7u32)
                    .expect("the runtime runs");
                self.result
                    .send(job.join_blocking().expect("the job ran"))
                    .expect("the test waits");
            }
        }
        std::thread_local! {
            static SPAWNS_ON_DROP: RefCell<Option<SpawnsOnDrop>> = const { RefCell::new(None) };
        }

        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .expect("a tokio runtime");
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
            let job = tethered::Builder::new()
                .spawn_on(&spawner, |_token| 1u32)
                .expect("the runtime runs");
            assert_eq!(job.join_blocking().expect("the job ran"), 1);
        })
        .join()
        .expect("the thread and its thread-locals' drops did not panic");
        assert_eq!(result.recv_timeout(Duration::from_secs(10)), Ok(7));
    }

    /// A gate that blocks its waiters until it is opened.
    fn gate() -> (Gate, Gate) {
        let gate = Gate(std::sync::Arc::new((
            std::sync::Mutex::new(false),
            std::sync::Condvar::new(),
        )));
        (gate.clone(), gate)
    }

    #[derive(Clone)]
    struct Gate(std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>);

    impl Gate {
        fn open(&self) {
            *self.0.0.lock().expect("the gate's lock") = true;
            self.0.1.notify_all();
        }

        fn wait(&self) {
            let mut open = self.0.0.lock().expect("the gate's lock");
            while !*open {
                open = self.0.1.wait(open).expect("the gate's lock");
            }
        }
    }
}
