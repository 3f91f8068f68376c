//! Python's asyncio cancellation reaches the native thread: a pyo3 function runs its work on a
//! native thread with a [`CancelToken`], and cancelling the awaiting task cancels the token.
//!
//! An asyncio task awaiting native work through `run_in_executor` or a `spawn_blocking`
//! bridge can be cancelled (a client disconnects, a timeout fires, a worker shuts down), but
//! the native thread never hears of it and runs on until the process exits.
//! [`spawn_native`] returns a coroutine instead, tied to the job: anything that cancels the
//! task awaiting it cancels the job's token, which the native loop checks with one atomic load.
//!
//! ```no_run
//! use pyo3::prelude::*;
//!
//! /// `await run(script)` interprets `script` on a native thread; cancelling the awaiting
//! /// task (a timeout, a client that went away) stops the interpreter within 1,000 steps.
//! #[pyfunction]
//! fn run(py: Python<'_>, script: String) -> PyResult<Bound<'_, PyAny>> {
//!     tethered_pyo3::spawn_native(py, move |token| {
//!         let mut steps = 0u64;
//!         for _op in script.bytes().cycle() {
//!             steps += 1; // one step of the interpreter
//!             if steps % 1_000 == 0 && token.is_cancelled() {
//!                 break;
//!             }
//!         }
//!         steps
//!     })
//! }
//!
//! #[pymodule]
//! fn sandbox(m: &Bound<'_, PyModule>) -> PyResult<()> {
//!     m.add_function(wrap_pyfunction!(run, m)?)
//! }
//! ```
//!
//! ```python
//! async def handler(script):
//!     async with asyncio.timeout(2):   # the timeout cancels the task, and the task the job
//!         return await sandbox.run(script)
//! ```
//!
//! No Rust async runtime is involved: the job runs on a [`tethered::Spawner`] (by default a
//! thread of its own, [`tethered::ThreadSpawner`]'s), its outcome is delivered with
//! `loop.call_soon_threadsafe`, and the future's done callback carries the cancel back. The
//! thread that ran the closure converts its value under the GIL and hands it to the loop, as
//! `asyncio.to_thread`'s worker does (so a pool thread may wait for the GIL before its next
//! job); a job that a cancel finished before it ran is handed over by a thread of the crate's
//! own, never by the thread that cancelled it, which may hold locks the GIL's holder waits for.
//!
//! The same functions work under trio (directly or as anyio's backend), chosen at each call:
//! the call waits in `trio.lowlevel.wait_task_rescheduled`, whose abort callback cancels the
//! job, and the outcome arrives through the run's trio token. [`run_native`] is the
//! synchronous twin, which Ctrl-C stops.
//!
//! # Options
//!
//! [`spawn_native_with`] and [`run_native_with`] take the family's one options value,
//! [`JobOptions`], and honour every option: `name`, `timeout` or `deadline` (`TimeoutError`),
//! `grace` (how long a cancelled caller waits for the closure; zero: not at all), `child_of`,
//! `panic`, and the placement (`on` a spawner, `in_scope`; a thread of its own when unplaced).
//! [`spawn_native`] and [`run_native`] are the same with `JobOptions::new()`.
//!
//! A cancelled caller waits for the closure to return, as anyio's and trio's
//! `to_thread.run_sync` do, so that once a cancellation completed, the native code is done;
//! a [`grace`](JobOptions::grace) bounds the wait, and the closure left running is counted in
//! [`stats()`](tethered::stats)`.detached` until it returns.
//!
//! # What cancels a job, and with which reason
//!
//! The same event reads the same [`CancelReason`] in every crate of the family; the Python
//! side's own detail (a `cancel(msg)` message, anyio's) is kept as the token's
//! [`cause`](CancelToken::cause).
//!
//! | On the Python side | The job's token: reason (cause) |
//! | --- | --- |
//! | `task.cancel()`; `task.cancel(msg)` | [`Dropped`](CancelReason::Dropped) (`msg`) |
//! | `asyncio.timeout` or `asyncio.timeout_at` expiring (3.11+), `asyncio.wait_for` expiring (3.12+) | [`Timeout`](CancelReason::Timeout) |
//! | `asyncio.wait_for` expiring on 3.10 and 3.11 (it cancels a task of its own and keeps no trace of the deadline) | `Dropped` |
//! | a `TaskGroup` sibling failing; `asyncio.run` cancelling the tasks left at its end; the call freed unfinished | `Dropped` |
//! | an anyio cancel scope's `cancel()`, on asyncio | `Dropped` (anyio's message, `"Cancelled via cancel scope ..."`) |
//! | an anyio deadline (`move_on_after`, `fail_after`), on asyncio | `Timeout` (`"...; reason: deadline exceeded"`) |
//! | trio's (or anyio-on-trio's) deadline passing (`move_on_after`, `fail_after`) | `Timeout` |
//! | trio's (or anyio-on-trio's) `cancel_scope.cancel()`, a nursery whose sibling failed | `Dropped` |
//! | Ctrl-C during [`run_native`] | `Dropped` (`"interrupted: KeyboardInterrupt"`) |
//! | a signal handler raising `SystemExit` during [`run_native`] (a SIGTERM handler's `sys.exit`, as in a Ray worker) | `Shutdown` (`"interrupted: SystemExit"`) |
//! | `ray.cancel` of a Ray task or a synchronous or threaded actor's method running [`run_native`]; of an async actor's method awaiting [`spawn_native`] | `Dropped` (`"ray.cancel"`; the async actor's, asyncio's cancel: no cause) |
//! | the options' `timeout` or `deadline` passing | `Timeout`; the call raises `TimeoutError` |
//! | the loop closed (or freed) with the job running; the interpreter exiting | [`Shutdown`](CancelReason::Shutdown) |
//! | a parent token (`child_of`), a [`NativeScope`](tethered::NativeScope) | theirs, with their cause |
//!
//! asyncio cancels a task without saying why; a deadline is found where it lives, in the
//! expired `asyncio.Timeout` of an `async with` on the awaiting task's chain of awaits.
//!
//! # When the loop goes away
//!
//! Event loops have no close hook; asyncio's drop their pending timers when they close, so the
//! first job on a loop schedules a timer due in 30 years whose drop cancels the loop's jobs if
//! the loop is closed (or gone) by then. A timer dropped while its loop is still open, because
//! a fake clock (looptime) made it fall due or code cancelled the loop's timers, hands over to
//! a fresh one and cancels nothing. What that gives:
//!
//! - `loop.close()` cancels every unfinished job started on the loop with
//!   [`CancelReason::Shutdown`], before `close()` returns. (A loop that keeps its timers when
//!   closing, or that cannot be weakly referenced, has its jobs cancelled only at interpreter
//!   exit.) A loop dropped unclosed with its tasks is freed by the garbage collector together
//!   with their futures: each job is then cancelled, `Shutdown` or `Dropped` as it comes.
//! - `asyncio.run` (and `asyncio.Runner`, and anyio's `run` on asyncio) first cancels the tasks
//!   still running, which cancels the jobs they await with `Dropped`, then closes the loop,
//!   which cancels the rest (jobs whose futures no task awaited) with `Shutdown`.
//! - Stopping a loop cancels nothing: a stopped loop may run again (`run_until_complete`
//!   stops it after every call), and its jobs' outcomes are delivered when it does.
//! - An outcome that arrives after its loop closed is dropped: `call_soon_threadsafe` refuses
//!   it with `RuntimeError`, which is expected and swallowed; nothing can await a future of a
//!   closed loop.
//! - At interpreter exit, an `atexit` hook (registered with the first job) cancels every job
//!   still running with `Shutdown` and waits, without the GIL and for 2 s at most, for the
//!   outcomes being delivered. A job started after it (from an `atexit` handler registered
//!   before the first job, which runs later) is refused with `RuntimeError`. From then on no thread of this crate attaches to the
//!   interpreter, so a closure that returns during finalization cannot crash it; exit does
//!   not wait for closures that are still running (they end with the process).
//!
//! # Guarantees
//!
//! - The closure runs without the GIL; the GIL is taken only to convert its value and to hand
//!   it to the loop.
//! - An outcome is delivered on the loop's thread and only to a future that is still pending:
//!   never `InvalidStateError`, and never "Event loop is closed" from a native thread (an
//!   outcome for a closed loop is dropped).
//! - A panic in the closure or in the conversion of its value is raised as pyo3's
//!   `PanicException` (a `BaseException`, as for a panicking `#[pyfunction]`) in the awaiting
//!   coroutine, never on the native thread; Rust's panic hook still reports it on stderr.
//! - Closing a loop cancels the jobs it still runs; interpreter exit cancels every job and does
//!   not wait for them (see above).
//! - Every closure counts in [`tethered::stats()`]`.running` until it returns. Each extension
//!   module links its own copy of `tethered`, so its `stats()` counts its own jobs.

#![forbid(unsafe_code)]
#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// A job's outcome (and the link to its future) can be dropped on a native thread that does not
// hold the GIL, which pyo3's reference pool makes safe: it defers the reference drops until a
// thread holds the GIL. Without the pool, pyo3 aborts the process there instead.
#[cfg(pyo3_disable_reference_pool)]
compile_error!(
    "tethered-pyo3 does not support `--cfg pyo3_disable_reference_pool`: a job's outcome and \
     its future's reference can be dropped on a native thread without the GIL, which needs \
     pyo3's reference pool; build without that cfg"
);

mod blocking;
mod call;
mod delivery;
mod event_loop;
mod exit;
mod gate;
mod glue;
mod into_py_result;
mod link;
#[cfg(tethered_loom)]
#[doc(hidden)]
pub mod loom;
mod observe;
mod outcome;
mod ray;
mod spawn;
mod sync;
mod tie;

pub use blocking::{SIGNAL_CHECK, run_native, run_native_with};
pub use into_py_result::IntoPyResult;
pub use observe::{cancel_stats, set_stubborn_after, stubborn_jobs};
pub use spawn::{spawn_native, spawn_native_with};
pub use tethered::{CancelReason, CancelToken, JobOptions};

/// The markers that keep [`IntoPyResult`]'s two blanket implementations apart.
pub mod marker {
    pub use crate::into_py_result::{Fallible, Value};
}

#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
