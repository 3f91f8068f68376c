//! Tie native-thread jobs to the future that awaits them: dropping the future cancels the job.
//!
//! In async Rust a task is cancelled by dropping its future: a timeout fires, a client
//! disconnects, a `select!` branch loses, a runtime shuts down. When that future was awaiting
//! work on a native thread (`spawn_blocking`, `unblock`, `std::thread`), the thread never hears
//! of it and runs on, burning CPU and holding a pool slot. `tethered` hands the native job a
//! [`CancelToken`] and cancels it when the awaiting future is dropped.
//!
//! ```
//! use std::time::Duration;
//! use tethered::{AbortableNative, CancelReason, NativeError, Tethered};
//!
//! // A thread of its own, as the core crate has no pool (an adapter's `spawn_native` puts
//! // the same closure on a runtime's blocking pool: see the table below).
//! let job = AbortableNative::spawn(|token| {
//!     let mut steps = 0u64;
//!     while !token.is_cancelled() { // one atomic load
//!         steps += 1; // a step of an interpreter, a solver, a render...
//!     }
//!     steps // what it got done before it was stopped
//! });
//! // A deadline the closure hears; awaiting (here joining) waits until it has stopped.
//! job.cancel_after(Duration::from_millis(50))?;
//! match job.join_blocking() {
//!     Err(NativeError::Cancelled { reason, returned, .. }) => {
//!         assert_eq!(reason, CancelReason::Timeout);
//!         println!("stopped ({reason}) after {returned:?} steps");
//!     }
//!     other => panic!("the loop only ends when it is cancelled: {other:?}"),
//! }
//!
//! // Dropping an unfinished handle (a lost `select!`, a client that hung up) stops it too.
//! let job = AbortableNative::spawn(|token| token.wait());
//! let token = job.token().clone();
//! drop(job);
//! assert_eq!(token.wait(), CancelReason::Dropped);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! # Which one?
//!
//! | To run a job... | Use | Why this one |
//! | --- | --- | --- |
//! | in an async service, on the runtime's blocking pool | `tethered_tokio::spawn_native(f)` (`tethered_smol::`, `tethered_async_std::`) | `spawn_blocking` with a token: the default |
//! | the same, with a name, a deadline, a grace, a request's token, a scope or a panic policy | `tethered_tokio::spawn_native_with(options, f)` with [`JobOptions`] | every option; a refused spawn comes back as a [`SpawnError`] |
//! | in a group a server bounds, cancels and shuts down as one | [`NativeScope::spawn`], or [`JobOptions::in_scope`] | a limit on running jobs, `cancel_all`, shutdown with a report |
//! | several at once, the first failure stopping the rest | [`JobGroup`] | fail-fast, results as they come (`join_next`) |
//! | on a thread of its own (a CLI, a test, a few long jobs), or on a pool you name | [`AbortableNative::spawn`], or [`spawn`] with [`JobOptions::on`] | no runtime needed |
//!
//! A job whose work runs elsewhere (a child process's supervisor, a foreign event loop, a
//! device) is made by [`spawn_external`], and a [`Completer`] publishes its result.
//!
//! # Reading a stop
//!
//! Every handle resolves to `Result<T, NativeError<T>>`, and reads the same way whoever
//! stopped the job, a drop, a timeout, a deadline, a parent, a scope, a shutdown or an
//! explicit cancel: `Ok(value)` means it finished and nothing stopped it;
//! `Err(NativeError::Cancelled { reason, returned, .. })` means it was stopped, the native code
//! is done, and `returned` holds what the closure returned after the cancel (`None` if it never
//! ran); `Err(NativeError::Abandoned { .. })` means the caller stopped waiting while the
//! closure still ran. [`NativeError`] has the table of every case, and [`CancelReason`] the
//! table of which event reads which reason, in every language of the family.
//!
//! Two ways to put a deadline on a job: [`Tethered::timeout`] answers at the deadline (with
//! `&mut job` it keeps the handle, to await afterwards); [`Tethered::cancel_after`] (or
//! [`JobOptions::timeout`]) cancels at the deadline and the handle waits for what the closure
//! returns.
//!
//! # The pieces
//!
//! - [`CancelSource`] / [`CancelToken`]: the owner and observer sides of one cancellation.
//!   [`CancelToken::is_cancelled`] is one atomic load; [`CancelToken::cancelled`] is a future;
//!   [`CancelToken::wait_timeout`] an interruptible sleep; [`CancelToken::on_cancel`] pushes
//!   the cancel into code that cannot poll; [`CancelToken::child`] and
//!   [`CancelSource::any_of`] link sources into a tree; [`CancelToken::never`] is a token for
//!   callers with nothing to cancel; [`CancelSource::cancel_at`] sets a deadline, which
//!   children inherit ([`CancelToken::deadline`]); [`CancelSource::cancel_with_cause`] gives a
//!   cancel a [`Cause`] beside its [`CancelReason`]; [`CancelToken::run_until_cancelled`]
//!   races async code against a token; [`CancelToken::arm`] arms an unblock action (shut a
//!   socket down, kill a child) for a call blocked in the kernel, disarmed before reuse.
//! - [`CancelOnDrop`]: wraps any future so that dropping it unfinished cancels a source.
//! - [`AbortableNative`]: a job on a native thread, tethered to the future that awaits it;
//!   [`JobOptions`] says how to start one; the [`Spawner`] trait puts its [`Runnable`] on a
//!   thread ([`ThreadSpawner`] here; tokio, smol and async-std in the adapter crates).
//!   [`Tethered`] is what every handle to tethered work (a thread's, a child process's, `&mut`
//!   either) has in common: cancel, deadlines, [`Tethered::timeout`], cancel-and-join;
//!   [`AbortHandle`] cancels one job from elsewhere.
//! - [`NativeScope`]: a group of jobs, cancelled together, optionally bounded, shut down with
//!   a deadline and a [`ShutdownReport`] of the stragglers. [`JobGroup`]: a fail-fast group.
//! - [`stats()`]: process-wide counts of running, idle, detached and cancelled jobs, so a leak
//!   shows; [`testing::assert_all_returned`] ends a test with proof of it.
//! - [`spawn_external`] and [`Completer`]: a job whose work runs elsewhere, with the same
//!   handle, token, name, counts and reading of its stop as any other.
//!
//! # Features
//!
//! - `tracing`: a span per job and events on spawn, cancel (with the reason), return (with the
//!   time from cancel to return), panic, detach and abandon. Off by default; costs nothing
//!   when off.
//!
//! # Guarantees
//!
//! - Dropping an unfinished [`AbortableNative`] cancels its token with [`CancelReason::Dropped`].
//! - One lifecycle per job: every job runs on its own token (a child of the tokens the caller
//!   gives, if any), and finishing seals it. A cancel and a finish are decided in one place,
//!   that token's state word: a cancel that came first makes the result `Cancelled` (with what
//!   the closure returned), one that came after changes nothing (its `cancel` returns
//!   `false`), a job never cancels its caller's token or its siblings, and [`Timeout`] and
//!   [`CancelWhen`] never drop a result that was published.
//! - The first cause wins: a token cancelled while one of its ancestors' cancel is still on
//!   its way down takes that ancestor's reason and cause, and `cancel` returns `true` only
//!   for the call whose reason the token reads ([`CancelSource::cancel`]).
//! - A job cancelled before its closure started never runs its closure.
//! - Callbacks run one at a time, in registration order, on the cancelling thread, each at
//!   most once; [`CancelToken::on_cancel`] states when a callback runs, in every state of its
//!   token.
//! - The token tree is stack-safe: cancel and drop walk it with loops, so a chain of a million
//!   levels (of children or of [`any_of`](CancelSource::any_of) links) cancels and drops on a
//!   small thread stack. A token whose handles all went is spliced out (its children move up to
//!   its parent), so a long-lived leaf keeps no dead ancestor alive.
//! - Every grace, timeout and deadline saturates: `Duration::MAX` means never. Every limit is
//!   a `NonZero` integer.
//! - Fork: a forked child (gunicorn's preload, `multiprocessing`'s fork) starts the crate's
//!   timer thread afresh on first use; handles made before the fork belong to the parent.
//!
//! # Where a panic goes
//!
//! No panic from user code leaves a call into this crate, aborts the process (unless a job
//! asks for [`PanicPolicy::Abort`]), or leaves its state half-changed; each is counted in
//! [`stats()`]:
//!
//! - a job's closure: its handle resolves to [`NativeError::Panicked`] (`panicked`);
//! - an `on_cancel` callback: caught, the other callbacks still run (`callback_panics`);
//! - the `Drop` of a value the crate drops for you (a closure skipped unrun and what it
//!   captured, a result nobody took, a deregistered callback, a waker): caught (`drop_panics`);
//! - a panic payload whose own `Drop` panics: leaked on purpose (`leaked_payloads`);
//! - a [`Spawner`] that panics: the spawn fails with a [`SpawnError`] naming the panic;
//! - a waker that panics when woken: caught, as a callback's panic is.
//!
//! The panic hook still prints each panic as it happens. No callback, waker or user `Drop`
//! ever runs while a lock of this crate is held. Every concurrent state machine here is
//! model-checked with [loom](https://docs.rs/loom) (see `loom-tests/` in the repository).

#![forbid(unsafe_code)]
#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]
#![cfg_attr(docsrs, feature(doc_cfg))]

mod armed;
mod callback;
mod cancel_on_drop;
mod cancels;
mod completer;
mod contain;
mod deferred;
mod error;
#[cfg(tethered_loom)]
mod fault;
mod group;
mod job;
mod job_id;
#[cfg(tethered_loom)]
#[doc(hidden)]
pub mod loom;
#[cfg(feature = "metrics")]
#[cfg_attr(docsrs, doc(cfg(feature = "metrics")))]
pub mod metrics;
mod native;
mod options;
mod panic;
mod per_process;
mod queue;
mod reason;
mod report;
mod scope;
mod shutdown;
mod spawn_error;
mod spawner;
mod spin;
mod state;
mod stats;
mod stubborn;
mod sync;
pub mod testing;
mod thread_name;
mod thread_spawner;
mod timer;
mod token;
mod trace;
mod until;
mod wait;

pub use armed::Armed;
pub use callback::CallbackGuard;
pub use cancel_on_drop::{CancelOnDrop, CancelOnDropExt};
pub use cancels::{ByReason, CancelStats, CancelToReturn, cancel_stats};
pub use completer::Completer;
pub use error::NativeError;
pub use group::{GroupFailure, JobGroup, JoinNext, JoinNextWithId, Joined};
pub use job_id::JobId;
pub use native::{
    AbortHandle, AbortableNative, CancelAndJoin, CancelWhen, Tethered, Timeout, spawn,
    spawn_external,
};
pub use options::{ExternalPlacement, InScope, JobOptions, OnSpawner, Placement, Unplaced};
pub use panic::{JobPanic, PanicPolicy};
pub use reason::{CancelReason, Cancelled, Cause};
pub use report::{ShutdownReport, Straggler};
pub use scope::{NativeScope, ScopeShutdown, WaitIdle};
pub use shutdown::{Shutdown, ShutdownFuture};
pub use spawn_error::SpawnError;
pub use spawner::{Runnable, Spawner};
pub use stats::{NativeStats, ScopeStats, stats};
pub use stubborn::{StubbornJob, set_stubborn_after, stubborn_after, stubborn_jobs};
pub use thread_spawner::ThreadSpawner;
pub use token::{CancelGuard, CancelSource, CancelToken};
pub use until::RunUntilCancelled;
pub use wait::WaitCancelled;

/// Not public API: what the crates of the tethered family (the runtime adapters, the process
/// supervisor, the language bridges) share with the core. They depend on this crate's exact
/// version; anything here may change in any release.
#[doc(hidden)]
pub mod __private {
    pub use crate::contain::{catch_panic, drop_contained};
    pub use crate::native::{spawn_or, spawned_or_stopped};
    pub use crate::per_process::PerProcess;
    pub use crate::reason::error_chain;
    pub use crate::spin::{SPIN, spin_until};
}
