//! `ThreadSpawner`'s thread cache: a thread whose job returned waits for another job (under
//! loom its keep-alive passes as soon as it waits), and a spawner hands its job to such a thread
//! or starts a new one. Only under `--cfg tethered_loom`, through the core's loom-only module;
//! the models drive the cache's own code.
//!
//! Negative control: a job handed to a thread that has already left (`thread_cache_hand_to_gone`)
//! never runs, and its handle reads the `Shutdown` of a job no thread took.

#![cfg(tethered_loom)]

use loom_tests::{fails_with_fault, model, thread};
use tethered::JobOptions;
use tethered::loom::ModelThreadCache;

/// A job spawned while the only idle thread's keep-alive passes: handed to it before it left,
/// or to a new thread after. It runs exactly once either way, and no thread stays idle.
#[test]
fn a_job_handed_to_a_thread_that_is_leaving_still_runs() {
    model("thread_cache_hand_vs_leave", || {
        let cache = ModelThreadCache::new("worker");
        let first = tethered::spawn(JobOptions::new().on(cache.clone()), |_| 1).unwrap();
        assert_eq!(first.join_blocking().unwrap(), 1);
        let second = tethered::spawn(JobOptions::new().on(cache.clone()), |_| 2);
        assert_eq!(
            second.unwrap().join_blocking().ok(),
            Some(2),
            "a job handed to an idle thread never ran"
        );
    });
}

#[test]
fn negative_control_hand_to_gone() {
    fails_with_fault(
        "a_job_handed_to_a_thread_that_is_leaving_still_runs",
        "thread_cache_hand_to_gone",
        "a job handed to an idle thread never ran",
    );
}

/// Two spawners at once beside one idle thread: at most one of them gets it, each job runs
/// exactly once, on a thread of its own.
#[test]
fn two_spawners_never_share_an_idle_thread() {
    model("thread_cache_two_spawners", || {
        let cache = ModelThreadCache::new("worker");
        let first = tethered::spawn(JobOptions::new().on(cache.clone()), |_| ()).unwrap();
        first.join_blocking().unwrap();
        let other = {
            let cache = cache.clone();
            thread::spawn(move || {
                tethered::spawn(JobOptions::new().on(cache), |_| 2)
                    .unwrap()
                    .join_blocking()
                    .ok()
            })
        };
        let mine = tethered::spawn(JobOptions::new().on(cache.clone()), |_| 3)
            .unwrap()
            .join_blocking()
            .ok();
        assert_eq!(mine, Some(3));
        assert_eq!(other.join().unwrap(), Some(2));
    });
}
