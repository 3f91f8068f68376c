//! What the loom models in `loom-tests/` drive beyond the public API: [`ThreadSpawner`]'s
//! thread cache, which under loom no `static` can hold. Built only under `--cfg tethered_loom`;
//! not part of the API.
//!
//! [`ThreadSpawner`]: crate::ThreadSpawner

use crate::spawn_error::SpawnError;
use crate::spawner::{Runnable, Spawner};
use crate::sync::Arc;
use crate::thread_spawner::ThreadCache;

/// A [`Spawner`] on a thread cache of its own: every job gets a thread called `name`, a
/// waiting one if there is one. A thread's keep-alive passes as soon as it waits.
#[derive(Clone)]
#[allow(missing_debug_implementations)]
pub struct ModelThreadCache {
    cache: Arc<ThreadCache>,
    name: &'static str,
}

impl ModelThreadCache {
    /// An empty cache whose threads are called `name`.
    pub fn new(name: &'static str) -> Self {
        ModelThreadCache {
            cache: Arc::new(ThreadCache::new()),
            name,
        }
    }

    /// How many threads wait for a job now.
    pub fn idle(&self) -> usize {
        self.cache.idle()
    }
}

impl Spawner for ModelThreadCache {
    fn spawn(&self, task: Runnable) -> Result<(), SpawnError> {
        self.cache.spawn(self.name, None, true, task)
    }
}
