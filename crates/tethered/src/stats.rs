//! Process-wide counters of native jobs: how a leak becomes visible.
//!
//! The counters are plain `std` atomics updated with `Relaxed` ordering: each is an independent
//! tally, nothing is published through them, and a reader that has synchronised with a job
//! (joined it) sees that job's updates through that synchronisation.
//!
//! Under `--cfg tethered_loom` a `static` cannot hold a loom atomic, and loom models run side by
//! side in one test process. The counters are then thread-local: loom runs all threads of one
//! model on the test's own OS thread, so each model sees exactly its own counters.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// A snapshot of the process-wide job counters, from [`stats()`].
///
/// ```
/// let before = tethered::stats();
/// let job = tethered::AbortableNative::spawn(|_token| 1 + 1);
/// assert_eq!(job.join_blocking().unwrap(), 2);
/// let after = tethered::stats();
/// assert!(after.spawned > before.spawned);
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NativeStats {
    /// Closures executing right now, and work running elsewhere on a job's behalf (a child
    /// process, a pool's turn). The number to watch: a native job that outlives the future
    /// that awaited it shows up here and nowhere else.
    pub running: usize,
    /// Work alive but waiting for its next turn: a worker pool's idle workers
    /// ([`Completer::set_idle`](crate::Completer::set_idle)). Not a leak; not in `running`.
    pub idle: usize,
    /// Jobs made and not yet started (or skipped, or dropped by their pool): waiting in a
    /// spawner's queue or a scope's.
    pub queued: usize,
    /// Jobs that were [detached](crate::AbortableNative::detach), abandoned, or left running by
    /// a scope shutdown, and have not finished.
    pub detached: usize,
    /// Jobs handed to a spawner successfully, ever.
    pub spawned: u64,
    /// Jobs whose token was cancelled before they finished (counted when they finish).
    pub cancelled: u64,
    /// Job closures that panicked.
    pub panicked: u64,
    /// `on_cancel` callbacks that panicked (caught; see
    /// [`CancelToken::on_cancel`](crate::CancelToken::on_cancel)).
    pub callback_panics: u64,
    /// Panics from the `Drop` of a value this crate dropped for its owner (a closure skipped
    /// unrun, a result nobody took, a callback deregistered unrun), contained and counted.
    pub drop_panics: u64,
    /// Panic payloads whose own `Drop` panicked: leaked on purpose rather than risk a panic
    /// that never ends, and counted here.
    pub leaked_payloads: u64,
}

/// The process-wide job counters right now.
///
/// `running` is the number to watch: a native job that outlives the future that awaited it
/// shows up there and nowhere else.
///
/// ```
/// let job = tethered::AbortableNative::spawn(|token| token.wait());
/// drop(job); // cancels it; its closure returns soon after
/// // At the end of a test: no closure is still running (see `tethered::testing`).
/// tethered::testing::assert_all_returned(std::time::Duration::from_secs(10));
/// assert_eq!(tethered::stats().running, 0);
/// ```
pub fn stats() -> NativeStats {
    with(Counters::snapshot)
}

/// A [`NativeScope`](crate::NativeScope)'s own job counts, from
/// [`NativeScope::stats`](crate::NativeScope::stats): the fields of [`NativeStats`] that count
/// jobs, for the scope's jobs alone.
///
/// ```
/// use tethered::NativeScope;
///
/// let scope = NativeScope::new();
/// scope.spawn(|_| ())?.join_blocking()?;
/// let mine = scope.stats();
/// assert_eq!((mine.spawned, mine.running, mine.queued), (1, 0, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScopeStats {
    /// As [`NativeStats::running`].
    pub running: usize,
    /// As [`NativeStats::idle`].
    pub idle: usize,
    /// As [`NativeStats::queued`].
    pub queued: usize,
    /// As [`NativeStats::detached`].
    pub detached: usize,
    /// As [`NativeStats::spawned`].
    pub spawned: u64,
    /// As [`NativeStats::cancelled`].
    pub cancelled: u64,
    /// As [`NativeStats::panicked`].
    pub panicked: u64,
}

impl Counters {
    /// The scope's counts right now.
    pub(crate) fn scope_snapshot(&self) -> ScopeStats {
        let all = self.snapshot();
        ScopeStats {
            running: all.running,
            idle: all.idle,
            queued: all.queued,
            detached: all.detached,
            spawned: all.spawned,
            cancelled: all.cancelled,
            panicked: all.panicked,
        }
    }

    /// The counts right now.
    pub(crate) fn snapshot(&self) -> NativeStats {
        let c = self;
        let active = c.active.load(Ordering::Relaxed);
        NativeStats {
            running: (active >> 32) as usize,
            idle: c.idle.load(Ordering::Relaxed),
            queued: (active & QUEUED_MASK) as usize,
            detached: c.detached.load(Ordering::Relaxed),
            spawned: c.spawned.load(Ordering::Relaxed),
            cancelled: c.cancelled.load(Ordering::Relaxed),
            panicked: c.panicked.load(Ordering::Relaxed),
            callback_panics: c.callback_panics.load(Ordering::Relaxed),
            drop_panics: c.drop_panics.load(Ordering::Relaxed),
            leaked_payloads: c.leaked_payloads.load(Ordering::Relaxed),
        }
    }
}

/// One set of job counters: the process-wide one, or a scope's.
pub(crate) struct Counters {
    /// Queued jobs in the low 32 bits, running closures in the high 32: one word, so that a
    /// job's start (one fewer queued, one more running) is one atomic update.
    active: AtomicU64,
    idle: AtomicUsize,
    detached: AtomicUsize,
    spawned: AtomicU64,
    cancelled: AtomicU64,
    panicked: AtomicU64,
    callback_panics: AtomicU64,
    drop_panics: AtomicU64,
    leaked_payloads: AtomicU64,
}

impl Counters {
    pub(crate) const fn new() -> Self {
        Counters {
            active: AtomicU64::new(0),
            idle: AtomicUsize::new(0),
            detached: AtomicUsize::new(0),
            spawned: AtomicU64::new(0),
            cancelled: AtomicU64::new(0),
            panicked: AtomicU64::new(0),
            callback_panics: AtomicU64::new(0),
            drop_panics: AtomicU64::new(0),
            leaked_payloads: AtomicU64::new(0),
        }
    }
}

#[cfg(not(tethered_loom))]
fn with<R>(f: impl FnOnce(&Counters) -> R) -> R {
    static COUNTERS: Counters = Counters::new();
    f(&COUNTERS)
}

#[cfg(tethered_loom)]
fn with<R>(f: impl FnOnce(&Counters) -> R) -> R {
    std::thread_local! {
        static COUNTERS: Counters = const { Counters::new() };
    }
    COUNTERS.with(f)
}

// ORDERING (all below): Relaxed; see the module docs.

/// What happened to a job, counted process-wide and, for a job of a scope, in the scope's
/// counters too.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    Queued,
    /// Left the queue without starting (skipped, or dropped unrun).
    Dequeued,
    /// Left the queue and started: one fewer queued and one more running, at once.
    Began,
    Returned,
    /// Running work went idle (a worker between turns): one fewer running, one more idle.
    Parked,
    /// Idle work runs again.
    Unparked,
    /// Idle work finished.
    ReturnedIdle,
    Spawned,
    Cancelled,
    Panicked,
    Detached,
    DetachedFinished,
}

impl Counters {
    fn count(&self, event: Event) {
        let (counter, up) = match event {
            Event::Queued => return add(&self.active, 1),
            Event::Dequeued => return sub(&self.active, 1),
            // Adds one running and takes one queued away: the queued half is at least one
            // (the job was counted queued), so the low half borrows nothing from the high one.
            Event::Began => return add(&self.active, RUNNING_ONE - 1),
            Event::Returned => return sub(&self.active, RUNNING_ONE),
            Event::Parked => {
                sub(&self.active, RUNNING_ONE);
                (&self.idle, true)
            }
            Event::Unparked => {
                add(&self.active, RUNNING_ONE);
                (&self.idle, false)
            }
            Event::ReturnedIdle => (&self.idle, false),
            Event::Detached => (&self.detached, true),
            Event::DetachedFinished => (&self.detached, false),
            Event::Spawned => return add(&self.spawned, 1),
            Event::Cancelled => return add(&self.cancelled, 1),
            Event::Panicked => return add(&self.panicked, 1),
        };
        if up {
            counter.fetch_add(1, Ordering::Relaxed);
        } else {
            counter.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

/// One running closure in [`Counters::active`].
const RUNNING_ONE: u64 = 1 << 32;
/// The queued half of [`Counters::active`].
const QUEUED_MASK: u64 = RUNNING_ONE - 1;

fn add(total: &AtomicU64, amount: u64) {
    total.fetch_add(amount, Ordering::Relaxed);
}

fn sub(total: &AtomicU64, amount: u64) {
    total.fetch_sub(amount, Ordering::Relaxed);
}

/// Counts `event` process-wide, and in `scope`'s counters if the job belongs to a scope.
pub(crate) fn count(event: Event, scope: Option<&Counters>) {
    with(|c| c.count(event));
    if let Some(scope) = scope {
        scope.count(event);
    }
}

pub(crate) fn callback_panicked() {
    with(|c| c.callback_panics.fetch_add(1, Ordering::Relaxed));
}

pub(crate) fn drop_panicked() {
    with(|c| c.drop_panics.fetch_add(1, Ordering::Relaxed));
}

pub(crate) fn payload_leaked() {
    with(|c| c.leaked_payloads.fetch_add(1, Ordering::Relaxed));
}
