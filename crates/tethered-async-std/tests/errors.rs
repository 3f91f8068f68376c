//! Scenario 7: spawning where other runtimes fail, and a panicking job.
//!
//! async-std's executor and blocking pool are process-wide, start on first use and never shut
//! down: there is no "outside a runtime" and no "after shutdown". These tests pin that spawning
//! works from a plain thread (the documented behaviour of `try_spawn_native` here) rather than
//! expect a `SpawnError` that cannot happen.

mod common;

use std::panic::{self, AssertUnwindSafe};
use std::thread;

use async_std::task;
use common::{PATIENCE, bounded};
use tethered::NativeError;

#[test]
fn try_spawn_native_works_on_a_thread_outside_any_async_std_task() {
    bounded("spawning from a plain thread", PATIENCE, || {
        let job = tethered_async_std::try_spawn_native(|_token| {
            thread::current().name().map(String::from)
        })
        .expect("async-std needs no runtime context");
        let pool_thread = job.join_blocking().expect("the job ran");
        assert!(pool_thread.is_some_and(|name| name.starts_with("blocking-")));
    });
}

#[test]
fn a_panicking_job_gives_panicked_and_the_awaiting_task_runs_on() {
    bounded("a panicking job", PATIENCE, || {
        let handle = task::spawn(async {
            let result =
                tethered_async_std::spawn_native(|_token| -> u32 { panic!("bad input") }).await;
            let err = result.expect_err("the closure panicked");
            assert!(
                matches!(&err, NativeError::Panicked(panic) if panic.message() == Some("bad input"))
            );
            "the task ran on"
        });
        assert_eq!(task::block_on(handle), "the task ran on");

        // Naive: `spawn_blocking` hands the closure's panic to the task that awaits it, which
        // dies with it.
        let handle = task::spawn(async {
            task::spawn_blocking(|| -> u32 { panic!("bad input") }).await;
            "the task ran on"
        });
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| task::block_on(handle)));
        let payload =
            outcome.expect_err("with plain spawn_blocking the awaiting task dies with the panic");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"bad input"));
    });
}
