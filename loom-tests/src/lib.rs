//! Helpers for the loom models in `tests/`.
//!
//! Each model is written once and run through [`model`]: under `--cfg tethered_loom` it is
//! explored by [`loom::model`](https://docs.rs/loom/latest/loom/fn.model.html) (every interleaving up to the preemption bound, which
//! `LOOM_MAX_PREEMPTIONS` sets), otherwise it runs once on plain `std` threads as a quick smoke
//! test, which is what `cargo test --workspace` does.
//!
//! Run the real thing with:
//!
//! ```text
//! RUSTFLAGS="--cfg tethered_loom" LOOM_MAX_PREEMPTIONS=3 CARGO_TARGET_DIR=target/loom \
//!     cargo test -p loom-tests --release
//! ```

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// Runs `f` as a loom model (under `--cfg tethered_loom`) or once, plainly; prints how many
/// interleavings were explored and how long it took.
///
/// # Panics
///
/// Without the cfg, if any `LOOM_*` variable is set: whoever set it meant to run the models
/// under loom, and a plain run would pass without having checked anything.
pub fn model<F>(name: &str, f: F)
where
    F: Fn() + Sync + Send + 'static,
{
    let iterations = std::sync::Arc::new(AtomicUsize::new(0));
    let counter = iterations.clone();
    let start = Instant::now();
    let body = move || {
        counter.fetch_add(1, Ordering::Relaxed);
        f();
    };
    #[cfg(tethered_loom)]
    loom::model(body);
    #[cfg(not(tethered_loom))]
    {
        // Plain runs share the process-wide `tethered::stats()`: one model at a time.
        static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((key, _)) = std::env::vars().find(|(key, _)| key.starts_with("LOOM_")) {
            panic!(
                "{key} is set but loom-tests was built without `--cfg tethered_loom`, so the \
                 models would run once on plain threads and check nothing; run \
                 RUSTFLAGS=\"--cfg tethered_loom\" cargo test -p loom-tests --release"
            );
        }
        body();
    }
    eprintln!(
        "model {name}: {} interleaving(s) in {:.2?} ({})",
        iterations.load(Ordering::Relaxed),
        start.elapsed(),
        if cfg!(tethered_loom) {
            "loom"
        } else {
            "plain run, not model-checked"
        },
    );
}

/// A negative control: runs the model test `test` of this test binary again, in a child
/// process, with the fault `fault` put back (`TETHERED_LOOM_FAULT`, read by the crate under
/// test in a loom build only), and asserts that it fails with `expect` in its output: the model
/// finds the bug it was written for. loom aborts the process once it reports a failure, hence
/// the child process.
///
/// # Panics
///
/// If the model passes with the fault put back, or fails for another reason.
#[cfg(tethered_loom)]
pub fn fails_with_fault(test: &str, fault: &str, expect: &str) {
    let output = std::process::Command::new(std::env::current_exe().expect("the test binary"))
        .args([test, "--exact", "--test-threads=1", "--nocapture"])
        .env("TETHERED_LOOM_FAULT", fault)
        .output()
        .expect("the test binary runs itself");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        !output.status.success(),
        "with the fault `{fault}` put back, {test} still passes: its model does not find the \
         bug\n{stdout}\n{stderr}"
    );
    assert!(
        stderr.contains(expect) || stdout.contains(expect),
        "with the fault `{fault}` put back, {test} failed, but not with \"{expect}\":\n{stdout}\n{stderr}"
    );
    eprintln!("negative control: {test} fails with the fault `{fault}` put back, as it must");
}

/// Threads: `loom::thread` under the cfg, `std::thread` otherwise.
pub mod thread {
    #[cfg(tethered_loom)]
    pub use loom::thread::{JoinHandle, spawn, yield_now};
    #[cfg(not(tethered_loom))]
    pub use std::thread::{JoinHandle, spawn, yield_now};
}

/// Synchronisation for the models' own bookkeeping: loom's under the cfg, `std`'s otherwise.
pub mod sync {
    #[cfg(tethered_loom)]
    pub use loom::sync::{
        Arc, Condvar, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    };
    #[cfg(not(tethered_loom))]
    pub use std::sync::{
        Arc, Condvar, Mutex,
        atomic::{AtomicBool, AtomicUsize, Ordering},
    };
}

/// Runs a future to completion on the model's thread.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    #[cfg(tethered_loom)]
    return loom::future::block_on(future);
    #[cfg(not(tethered_loom))]
    return futures_executor::block_on(future);
}

/// A [`tethered::Spawner`] that runs each task on a model thread and can join them all, so a
/// model can assert on the state after every native thread has finished. Its clones share the
/// threads (a job's options take their spawner by value: give them a clone, and join through
/// the one kept).
#[derive(Clone, Default)]
pub struct JoinableSpawner {
    threads: std::sync::Arc<std::sync::Mutex<Vec<thread::JoinHandle<()>>>>,
}

impl JoinableSpawner {
    /// Joins every thread started so far (through any clone), and those they start meanwhile.
    pub fn join_all(&self) {
        loop {
            let threads = std::mem::take(&mut *self.threads.lock().unwrap());
            if threads.is_empty() {
                return;
            }
            for thread in threads {
                thread.join().unwrap();
            }
        }
    }
}

impl tethered::Spawner for JoinableSpawner {
    fn spawn(&self, task: tethered::Runnable) -> Result<(), tethered::SpawnError> {
        let handle = thread::spawn(move || task.run());
        self.threads.lock().unwrap().push(handle);
        Ok(())
    }
}

impl std::fmt::Debug for JoinableSpawner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JoinableSpawner").finish_non_exhaustive()
    }
}

/// A [`tethered::Spawner`] that keeps tasks until the model runs or drops them. Its clones
/// share the tasks held.
#[derive(Clone, Debug, Default)]
pub struct HeldSpawner {
    tasks: std::sync::Arc<std::sync::Mutex<Vec<tethered::Runnable>>>,
}

impl HeldSpawner {
    /// Takes the oldest held task (held through any clone).
    pub fn take(&self) -> tethered::Runnable {
        self.tasks.lock().unwrap().remove(0)
    }
}

impl tethered::Spawner for HeldSpawner {
    fn spawn(&self, task: tethered::Runnable) -> Result<(), tethered::SpawnError> {
        self.tasks.lock().unwrap().push(task);
        Ok(())
    }
}
