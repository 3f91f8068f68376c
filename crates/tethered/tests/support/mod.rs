//! Spawners that let a test decide when, or whether, a job runs.

#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, Mutex};

use tethered::{Runnable, SpawnError, Spawner};

/// Queues tasks; the test runs them (on threads of its choosing) or drops them.
#[derive(Clone, Default)]
pub struct QueueSpawner {
    queue: Arc<Mutex<Vec<Runnable>>>,
}

impl QueueSpawner {
    pub fn take(&self) -> Runnable {
        self.queue.lock().unwrap().remove(0)
    }

    pub fn len(&self) -> usize {
        self.queue.lock().unwrap().len()
    }

    /// Drops every queued task unrun, as a pool that shuts down does.
    pub fn shut_down(&self) {
        let tasks = std::mem::take(&mut *self.queue.lock().unwrap());
        drop(tasks);
    }
}

impl Spawner for QueueSpawner {
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
        self.queue.lock().unwrap().push(task);
        Ok(())
    }
}

/// Drops every task before returning `Ok`, as a pool that is already shut down does.
pub struct ClosedSpawner;

impl Spawner for ClosedSpawner {
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
        drop(task);
        Ok(())
    }
}

/// Refuses every task with an error of its own.
pub struct FailingSpawner;

impl Spawner for FailingSpawner {
    fn spawn(&self, _task: Runnable) -> Result<(), SpawnError> {
        Err(SpawnError::other("no capacity left"))
    }
}

/// Runs every task inline, inside `spawn`.
pub struct InlineSpawner;

impl Spawner for InlineSpawner {
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
        task.run();
        Ok(())
    }
}

/// The job every leak test needs: it ignores its token, says when it has started, and blocks
/// until the test releases it (or drops the [`Stuck`], so no test leaves it behind).
pub struct Stuck {
    started: std::sync::mpsc::Receiver<()>,
    started_tx: std::sync::mpsc::Sender<()>,
    release: std::sync::mpsc::Sender<()>,
    release_rx: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

impl Stuck {
    pub fn new() -> Self {
        let (started_tx, started) = std::sync::mpsc::channel();
        let (release, release_rx) = std::sync::mpsc::channel();
        Stuck {
            started,
            started_tx,
            release,
            release_rx: Mutex::new(Some(release_rx)),
        }
    }

    /// The job's closure (one per `Stuck`).
    pub fn job(&self) -> impl FnOnce(tethered::CancelToken) + Send + 'static {
        let started = self.started_tx.clone();
        let release = self
            .release_rx
            .lock()
            .unwrap()
            .take()
            .expect("one job per Stuck");
        move |_token| {
            started.send(()).unwrap();
            let _ = release.recv(); // ignores its token
        }
    }

    /// Blocks until the job's closure is running.
    pub fn wait_started(&self) {
        self.started.recv().unwrap();
    }

    /// Lets the job's closure return.
    pub fn release(&self) {
        let _ = self.release.send(());
    }
}

impl Drop for Stuck {
    fn drop(&mut self) {
        self.release();
    }
}

/// Keeps every task and still returns `Err`: a spawner that breaks its contract. The test can
/// run what it kept, which must only find its job finished.
#[derive(Clone, Default)]
pub struct KeepingFailingSpawner {
    kept: Arc<Mutex<Vec<Runnable>>>,
}

impl KeepingFailingSpawner {
    pub fn take(&self) -> Runnable {
        self.kept.lock().unwrap().remove(0)
    }
}

impl Spawner for KeepingFailingSpawner {
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
        self.kept.lock().unwrap().push(task);
        Err(SpawnError::other("refused, but kept the task"))
    }
}

/// A job whose work runs elsewhere, started at once, and its completer (the pair that
/// `tethered::spawn_external` hands to its start function).
pub fn external<T: Send + 'static>(
    options: tethered::JobOptions,
) -> (tethered::AbortableNative<T>, tethered::Completer<T>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let job = tethered::spawn_external(options, move |completer| tx.send(completer).unwrap())
        .expect("an unplaced external job without a deadline starts");
    let completer = rx.recv().expect("an unplaced external job starts at once");
    (job, completer)
}
