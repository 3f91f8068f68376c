//! [`Handoff`]: settles, in one place, who stops a child whose waiter never ran.
//!
//! The waiter's closure can be dropped unrun: cancelled while still queued in a pool (the core
//! then drops it at once), dropped by a pool that shuts down, or refused by the spawner. Its
//! [`Tether`](crate::tether::Tether) then hands the unreaped child here, and:
//!
//! ```text
//!   Submitting ──(closure dropped)──▶ Parked ──(spawner said Ok)──▶ Rescued ─┐
//!       │                               └──(spawner refused: killed now)     │
//!       └──(spawner said Ok)──▶ Handed ──(closure dropped)──▶ Rescued ───────┤
//!                                  │                                         ▼
//!                                  └──────────(ProcessJob dropped)──────▶ Released
//! ```
//!
//! A rescue is a tethered job on a thread of its own that runs the same stop sequence (the
//! polite signal at once, SIGKILL after the grace) and reaps the child, so `stats()` counts it
//! as running until the child is reaped. The `ProcessJob` awaits it; once the `ProcessJob` is
//! gone (`Released`), a rescue is detached instead of dropped, since dropping an unstarted
//! job's handle would skip it.
//!
//! # Invariants
//!
//! 1. The stage changes only under `stage`'s lock, and no handle is dropped or detached, and
//!    no thread started, while it is held.
//! 2. A rescue handle is either in `Rescued`, owned by the `ProcessJob`, or detached: never
//!    dropped while its job may still be unstarted.
//! 3. The core drops an unrun closure before it publishes the job's `Cancelled` result, so a
//!    `ProcessJob` that sees that result finds the rescue already in `Rescued`.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tethered::AbortableNative;

use crate::live::Live;
use crate::output::ProcessOutput;

/// Starts a rescue for an orphaned child (`launch::rescue`, given by the spawning code, so that
/// this file needs nothing of the waiter's): `None` if no thread could be had, after the child
/// was killed and reaped on the calling thread.
pub(crate) type Rescue = fn(Live) -> Option<AbortableNative<ProcessOutput>>;

/// Shared by the spawning thread, the waiter's closure and the `ProcessJob`.
pub(crate) struct Handoff {
    stage: Mutex<Stage>,
    rescue: Rescue,
}

enum Stage {
    /// `spawn` is handing the waiter to the spawner.
    Submitting,
    /// The waiter was dropped unrun while being handed over; `spawn` decides what follows.
    Parked(Live),
    /// The spawner took the waiter.
    Handed,
    /// The waiter was dropped unrun after the hand-over; this rescue stops the child.
    Rescued(AbortableNative<ProcessOutput>),
    /// The `ProcessJob` took the rescue or is gone.
    Released,
}

impl Handoff {
    pub(crate) fn new(rescue: Rescue) -> Arc<Handoff> {
        Arc::new(Handoff {
            stage: Mutex::new(Stage::Submitting),
            rescue,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Stage> {
        // No code that can panic runs under the lock.
        self.stage.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The waiter was dropped with its child unreaped.
    pub(crate) fn orphaned(&self, live: Live) {
        {
            let mut stage = self.lock();
            if matches!(*stage, Stage::Submitting) {
                *stage = Stage::Parked(live);
                return;
            }
        }
        // If no thread can be had, the child was killed and reaped on this thread.
        let Some(rescue) = (self.rescue)(live) else {
            return;
        };
        let mut stage = self.lock();
        if matches!(*stage, Stage::Handed) {
            *stage = Stage::Rescued(rescue);
        } else {
            drop(stage);
            rescue.detach();
        }
    }

    /// The spawner has answered; returns the child if the waiter was dropped meanwhile.
    pub(crate) fn handed(&self) -> Option<Live> {
        let mut stage = self.lock();
        match std::mem::replace(&mut *stage, Stage::Handed) {
            Stage::Parked(live) => Some(live),
            Stage::Submitting => None,
            other => {
                *stage = other;
                None
            }
        }
    }

    /// Keeps a rescue that `spawn` started for a waiter dropped while being handed over.
    pub(crate) fn rescued(&self, rescue: AbortableNative<ProcessOutput>) {
        *self.lock() = Stage::Rescued(rescue);
    }

    /// The `ProcessJob` takes the rescue to await it, or lets go of it (then detach it): the
    /// stage is `Released` from now on.
    pub(crate) fn release(&self) -> Option<AbortableNative<ProcessOutput>> {
        let old = std::mem::replace(&mut *self.lock(), Stage::Released);
        match old {
            Stage::Rescued(rescue) => Some(rescue),
            _ => None,
        }
    }
}
