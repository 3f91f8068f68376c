//! Scenario 7: spawning where other runtimes fail, and a panicking job.
//!
//! The `blocking` pool is process-wide: there is no "outside a runtime" and no "after
//! shutdown" for it, so these tests pin that spawning works in both places (the documented
//! behaviour of `try_spawn_native` on smol) rather than expect a `SpawnError` that cannot happen.

mod common;

use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::thread;

use common::{PATIENCE, bounded};
use smol::Executor;
use tethered::NativeError;

#[test]
fn try_spawn_native_works_on_a_thread_without_any_executor() {
    bounded("spawning from a plain thread", PATIENCE, || {
        let job =
            tethered_smol::try_spawn_native(|_token| thread::current().name().map(String::from))
                .expect("the blocking pool needs no runtime");
        let pool_thread = job.join_blocking().expect("the job ran");
        assert!(pool_thread.is_some_and(|name| name.starts_with("blocking-")));
    });
}

#[test]
fn try_spawn_native_works_after_the_executor_that_used_it_was_dropped() {
    bounded("spawning after an executor was dropped", PATIENCE, || {
        let executor = Arc::new(Executor::new());
        let first = executor.spawn(async { tethered_smol::spawn_native(|_token| 1).await });
        assert_eq!(smol::block_on(executor.run(first)).unwrap(), 1);
        drop(executor);

        let job = tethered_smol::try_spawn_native(|_token| 2).expect("the pool does not shut down");
        assert_eq!(smol::block_on(job).unwrap(), 2);
    });
}

#[test]
fn a_panicking_job_gives_panicked_and_the_awaiting_task_runs_on() {
    bounded("a panicking job", PATIENCE, || {
        let executor = Executor::new();
        let task = executor.spawn(async {
            let result = tethered_smol::spawn_native(|_token| -> u32 { panic!("bad input") }).await;
            let err = result.expect_err("the closure panicked");
            assert!(
                matches!(&err, NativeError::Panicked(panic) if panic.message() == Some("bad input"))
            );
            "the task ran on"
        });
        assert_eq!(smol::block_on(executor.run(task)), "the task ran on");

        // Naive: `unblock` hands the closure's panic to the task that awaits it, which dies.
        let executor = Executor::new();
        let task = executor.spawn(async {
            smol::unblock(|| -> u32 { panic!("bad input") }).await;
            "the task ran on"
        });
        let outcome = panic::catch_unwind(AssertUnwindSafe(|| smol::block_on(executor.run(task))));
        let payload =
            outcome.expect_err("with plain unblock the awaiting task dies with the panic");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"bad input"));
    });
}
