//! Spawners that let a test decide when, or whether, a job runs.

#![allow(dead_code, unreachable_pub)]

use std::sync::{Arc, Mutex};

use tethered::{NativeTask, SpawnError, Spawner};

/// Queues tasks; the test runs them (on threads of its choosing) or drops them.
#[derive(Clone, Default)]
pub struct QueueSpawner {
    queue: Arc<Mutex<Vec<NativeTask>>>,
}

impl QueueSpawner {
    pub fn take(&self) -> NativeTask {
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
    fn spawn(&self, task: NativeTask) -> Result<(), SpawnError> {
        self.queue.lock().unwrap().push(task);
        Ok(())
    }
}

/// Drops every task before returning `Ok`, as a pool that is already shut down does.
pub struct ClosedSpawner;

impl Spawner for ClosedSpawner {
    fn spawn(&self, task: NativeTask) -> Result<(), SpawnError> {
        drop(task);
        Ok(())
    }
}

/// Refuses every task with an error of its own.
pub struct FailingSpawner;

impl Spawner for FailingSpawner {
    fn spawn(&self, _task: NativeTask) -> Result<(), SpawnError> {
        Err(SpawnError::other("no capacity left"))
    }
}

/// Runs every task inline, inside `spawn`.
pub struct InlineSpawner;

impl Spawner for InlineSpawner {
    fn spawn(&self, task: NativeTask) -> Result<(), SpawnError> {
        task.run();
        Ok(())
    }
}
