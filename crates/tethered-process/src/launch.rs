//! Where this crate meets the core's job builder: the waiter and the rescue become tethered
//! jobs here, and nowhere else.

use tethered::{AbortableNative, Builder, NativeScope, SpawnError, Spawner, ThreadSpawner};

use crate::live::Live;
use crate::output::ProcessOutput;
use crate::tether::Tether;

/// Where a waiter is spawned.
pub(crate) enum Place<'a, S: ?Sized> {
    /// Through a spawner.
    On(&'a S),
    /// In a scope.
    In(&'a NativeScope),
}

/// The job options a `Process` starts from when it was given none: a name that says which
/// child the job waits for.
pub(crate) fn default_job(name: String) -> Builder {
    Builder::new().name(name)
}

/// Spawns the waiter: a tethered job whose closure waits for the child, stops it when the job's
/// token is cancelled, and reaps it.
pub(crate) fn waiter<S: Spawner + ?Sized>(
    job: Builder,
    place: Place<'_, S>,
    tether: Tether,
) -> Result<AbortableNative<ProcessOutput>, SpawnError> {
    let closure = move |token| tether.run(Some(&token));
    match place {
        Place::On(spawner) => job.spawn_on(spawner, closure),
        Place::In(scope) => job.spawn_in(scope, closure),
    }
}

/// Starts a rescue for a child whose waiter never ran: a job on a thread of its own that stops
/// the child at once (the polite signal, SIGKILL after the grace) and reaps it. Its token is its
/// own and never cancelled, so it always runs. `None` if no thread could be started: the child
/// has then been killed and reaped on this thread.
pub(crate) fn rescue(live: Live) -> Option<AbortableNative<ProcessOutput>> {
    let name = format!("stop pid {}", live.pid());
    let tether = Tether::rescue(live);
    Builder::new()
        .name(name)
        .spawn_on(&ThreadSpawner::new(), move |_own_token| tether.run(None))
        .ok()
}
