//! Scenario 7: spawning where other runtimes fail, and a panicking job.
//!
//! The `blocking` pool that smol and async-std run blocking work on is process-wide, needs no
//! runtime context and never shuts down: there is no "outside a runtime" and no "after
//! shutdown" for it. So these drivers pin that spawning through the adapter's spawner works
//! where tokio's fails (`TokioSpawner::try_current` outside a runtime) rather than expect a
//! `SpawnError` that cannot happen.

use std::panic::{self, AssertUnwindSafe};
use std::thread;

use tethered::{JobOptions, NativeError};

use crate::{PATIENCE, Runtime, bounded};

/// The adapter's spawner, from a plain thread outside any task or executor, runs the job on a
/// `blocking` pool thread.
pub fn spawning_works_on_a_plain_thread<R: Runtime>() {
    bounded("spawning from a plain thread", PATIENCE, || {
        let job = R::spawner()
            .and_then(|spawner| {
                tethered::spawn(JobOptions::new().on(spawner), |_token| {
                    thread::current().name().map(String::from)
                })
            })
            .unwrap_or_else(|err| panic!("{} needs no runtime context: {err}", R::NAME));
        let pool_thread = job.join_blocking().expect("the job ran");
        assert!(pool_thread.is_some_and(|name| name.starts_with("blocking-")));
    });
}

/// A panicking job gives `Panicked` with the message to the task that awaits it, which runs
/// on; with the runtime's plain blocking spawn, the awaiting task dies with the panic.
pub fn a_panicking_job_gives_panicked_and_the_awaiting_task_runs_on<R: Runtime>() {
    bounded("a panicking job", PATIENCE, || {
        let task = R::spawn(async {
            let result = R::spawn_native(|_token| -> u32 { panic!("bad input") }).await;
            let err = result.expect_err("the closure panicked");
            assert!(
                matches!(&err, NativeError::Panicked(panic) if panic.message() == Some("bad input"))
            );
            "the task ran on"
        });
        assert_eq!(R::block_on(task), "the task ran on");

        // Naive: the plain blocking spawn hands the closure's panic to the task that awaits
        // it, which dies with it.
        let task = R::spawn(async {
            R::spawn_blocking(|| -> u32 { panic!("bad input") }).await;
            "the task ran on"
        });
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| R::block_on(task)));
        let payload =
            outcome.expect_err("with a plain blocking spawn the awaiting task dies with the panic");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"bad input"));
    });
}
