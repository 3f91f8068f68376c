//! Scenario 7: spawning where tokio cannot run the job is an error, not a silent drop; a
//! panicking job is an error value, and the task awaiting it runs on.

mod common;

use std::future::pending;
use std::panic::catch_unwind;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{RUNTIME, runtime};
use tethered::{AbortableNative, CancelReason, JobOptions, NativeError, SpawnError, Tethered};
use tethered_tokio::TokioSpawner;

/// Records whether a closure ran, and whether it was dropped without running.
#[derive(Clone, Default)]
struct Fate {
    ran: Arc<AtomicBool>,
    dropped: Arc<AtomicBool>,
}

impl Fate {
    /// A closure for the naive `spawn_blocking`, reporting its fate.
    fn closure(&self) -> impl FnOnce() + Send + 'static {
        struct OnDrop(Arc<AtomicBool>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                self.0.store(true, Ordering::SeqCst);
            }
        }
        let ran = self.ran.clone();
        let on_drop = OnDrop(self.dropped.clone());
        move || {
            let _on_drop = on_drop;
            ran.store(true, Ordering::SeqCst);
        }
    }

    fn ran(&self) -> bool {
        self.ran.load(Ordering::SeqCst)
    }

    fn dropped(&self) -> bool {
        self.dropped.load(Ordering::SeqCst)
    }
}

/// A runtime that has shut down, and its handle.
fn shut_down_handle() -> tokio::runtime::Handle {
    let runtime = runtime();
    let handle = runtime.handle().clone();
    drop(runtime);
    handle
}

fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| {
            payload
                .downcast_ref::<&str>()
                .map(|text| (*text).to_owned())
        })
        .unwrap_or_default()
}

#[test]
fn spawning_on_the_current_runtime_outside_a_runtime_is_a_no_runtime_error() {
    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let err = TokioSpawner::try_current()
        .and_then(|spawner| {
            tethered::spawn(JobOptions::new().on(spawner.clone()), move |_token| {
                flag.store(true, Ordering::SeqCst)
            })
        })
        .expect_err("there is no runtime here");
    assert!(
        matches!(
            err,
            SpawnError::NoRuntime {
                runtime: "tokio",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("no tokio runtime"), "{err}");
    assert!(matches!(
        TokioSpawner::try_current(),
        Err(SpawnError::NoRuntime { .. })
    ));
    assert!(!ran.load(Ordering::SeqCst));
}

#[test]
fn spawn_native_outside_a_runtime_panics_naming_spawn_native_with() {
    let payload = catch_unwind(|| tethered_tokio::spawn_native(|_token| ()))
        .expect_err("spawn_native must panic outside a runtime");
    let message = panic_message(&*payload);
    assert!(
        message.contains("`spawn_native_with` returns this as an error"),
        "{message}"
    );
    assert!(message.contains("no tokio runtime"), "{message}");
}

#[test]
fn naive_spawn_blocking_outside_a_runtime_can_only_panic() {
    let payload = catch_unwind(|| tokio::task::spawn_blocking(|| ()))
        .expect_err("spawn_blocking panics outside a runtime");
    let message = panic_message(&*payload);
    assert!(message.contains("Tokio 1.x runtime"), "{message}");
}

#[test]
fn spawning_on_a_runtime_that_shut_down_is_a_shutdown_error_and_never_runs_the_closure() {
    let handle = shut_down_handle();
    let _inside = handle.enter();
    let fate = Fate::default();
    let closure = fate.closure();
    let err = TokioSpawner::try_current()
        .and_then(|spawner| {
            tethered::spawn(JobOptions::new().on(spawner.clone()), move |_token| {
                closure()
            })
        })
        .expect_err("a runtime that shut down takes no jobs");
    assert!(
        matches!(err, SpawnError::Shutdown { runtime: "tokio" }),
        "{err:?}"
    );
    assert!(err.to_string().contains("shutting down"), "{err}");
    assert!(!fate.ran());
    assert!(fate.dropped(), "the refused closure is dropped, not kept");
}

#[test]
fn tokio_spawner_after_shutdown_background_is_a_shutdown_error() {
    let runtime = runtime();
    let spawner = TokioSpawner::new(runtime.handle().clone());
    runtime.shutdown_background();
    let err =
        tethered::spawn(JobOptions::new().on(spawner.clone()), |_token| ()).expect_err("shut down");
    assert!(
        matches!(err, SpawnError::Shutdown { runtime: "tokio" }),
        "{err:?}"
    );
}

#[test]
fn spawn_native_after_shutdown_returns_a_handle_that_reports_the_shutdown() {
    let handle = shut_down_handle();
    let _inside = handle.enter();
    let fate = Fate::default();
    let closure = fate.closure();
    // No panic (a `Drop` scheduling clean-up during shutdown must not abort the process)...
    let job = tethered_tokio::spawn_native(move |_token| closure());
    // ...and no silent drop: the handle says what happened, and the closure never runs.
    assert!(job.is_finished());
    assert!(fate.dropped());
    assert!(!fate.ran());
    assert_eq!(job.token().reason(), Some(CancelReason::Shutdown));
    assert!(matches!(
        job.join_blocking(),
        Err(NativeError::Cancelled {
            reason: CancelReason::Shutdown,
            returned: None,
            ..
        })
    ));
}

#[test]
fn naive_spawn_blocking_after_shutdown_returns_a_handle_whose_closure_never_runs() {
    let handle = shut_down_handle();
    let fate = Fate::default();
    // No error, no panic: the call looks like it worked...
    let join = handle.spawn_blocking(fate.closure());
    // ...but tokio dropped the closure before returning, and it will never run.
    assert!(fate.dropped());
    assert!(!fate.ran());
    let result = runtime().block_on(join);
    assert!(result.expect_err("never ran").is_cancelled());
}

/// A job spawned from a task's `Drop` while the runtime shuts down is either refused or
/// finishes during the shutdown: never a handle that waits for a closure that will not run.
/// Spawned through `TokioSpawner` itself, so the refusal is its own `Shutdown`, not the core's
/// generic `Rejected` (which `spawn_native` would also turn into a handle stopped with
/// `Shutdown`).
#[test]
fn a_job_spawned_while_the_runtime_shuts_down_is_refused_or_finishes() {
    type Outcome = Arc<Mutex<Option<Result<AbortableNative<()>, SpawnError>>>>;
    struct SpawnOnDrop(Outcome);
    impl Drop for SpawnOnDrop {
        fn drop(&mut self) {
            let spawned =
                tethered::spawn(JobOptions::new().on(TokioSpawner::current()), |_token| ());
            *self.0.lock().unwrap() = Some(spawned);
        }
    }

    for flavor in ["multi_thread", "current_thread"] {
        let runtime = match flavor {
            "multi_thread" => runtime(),
            _ => tokio::runtime::Builder::new_current_thread()
                .build()
                .expect("build a runtime"),
        };
        let outcome = Outcome::default();
        let on_drop = SpawnOnDrop(outcome.clone());
        runtime.spawn(async move {
            let _on_drop = on_drop;
            pending::<()>().await
        });
        if flavor == "multi_thread" {
            // Let a worker poll the task, so the shutdown drops it mid-await.
            std::thread::sleep(Duration::from_millis(20));
        }
        drop(runtime);

        let spawned = outcome
            .lock()
            .unwrap()
            .take()
            .expect("the task was dropped");
        match spawned {
            Err(err) => {
                assert!(
                    matches!(err, SpawnError::Shutdown { .. }),
                    "{flavor}: {err:?}"
                );
                eprintln!("[{RUNTIME}] spawn during {flavor} shutdown: refused ({err})");
            }
            Ok(job) => {
                assert!(
                    job.is_finished(),
                    "{flavor}: a job outlived the runtime's shutdown"
                );
                let result = job.join_blocking();
                assert!(
                    matches!(
                        result,
                        Ok(())
                            | Err(NativeError::Cancelled {
                                reason: CancelReason::Shutdown,
                                returned: None,
                                ..
                            })
                    ),
                    "{flavor}: {result:?}"
                );
                eprintln!("[{RUNTIME}] spawn during {flavor} shutdown: accepted, {result:?}");
            }
        }
    }
}

#[test]
fn a_panicking_job_is_an_error_and_the_awaiting_task_runs_on() {
    let runtime = runtime();
    let (result, after) = runtime.block_on(async {
        let task = tokio::spawn(async {
            let result =
                tethered_tokio::spawn_native(|_token| -> u32 { panic!("job blew up") }).await;
            // Still here: the panic stayed on the blocking thread.
            (result, "the task ran on")
        });
        task.await.expect("the awaiting task itself did not panic")
    });
    let err = result.expect_err("the job panicked");
    assert!(err.is_panic());
    assert_eq!(err.to_string(), "native job panicked");
    assert_eq!(
        std::error::Error::source(&err).unwrap().to_string(),
        "job blew up"
    );
    assert_eq!(after, "the task ran on");
}
