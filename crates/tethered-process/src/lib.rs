//! A child process tethered to the future that awaits it: dropping the future stops the
//! process, gracefully first, and nothing is left behind.
//!
//! ```
//! use std::{process::Command, time::Duration};
//! use tethered::Tethered;
//! use tethered_process::Process;
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let mut busy = Command::new("sh");
//!     busy.args(["-c", "while :; do :; done"]); // never ends by itself
//!     let job = Process::new(busy).spawn()?; // own process group, SIGTERM, SIGKILL 2 s later
//!     let token = job.token().clone();
//!     // The deadline cancels the job: its group gets SIGTERM at once, and it is reaped.
//!     assert!(job.timeout(Duration::from_millis(50)).await.is_err());
//!     assert_eq!(token.reason(), Some(tethered::CancelReason::Timeout));
//!     tethered::testing::assert_all_returned(Duration::from_secs(10)); // no waiter left
//!     Ok(())
//! }
//! ```
//!
//! [`Process`] builds the child from a [`std::process::Command`]; [`ProcessJob`] is the handle,
//! a future resolving once the child is reaped to its [`ProcessOutput`] (carried by
//! `NativeError::Cancelled { returned: Some(output), .. }` when a cancel stopped it), and a
//! [`tethered::Tethered`] job: `timeout`, `cancel_when`, `cancel_and_join` and the rest come
//! with it.
//! The crate is runtime-agnostic: one supervisor thread of its own watches every child.
//!
//! # What happens on a cancel
//!
//! 1. The job's token is cancelled: the handle was dropped ([`CancelReason::Dropped`]), a
//!    timeout fired, a parent token or a scope was cancelled, or
//!    [`Tethered::cancel`](tethered::Tethered::cancel).
//! 2. The supervisor wakes at once and sends the polite signal ([`StopSignal::Term`] unless set
//!    otherwise) to the child's process group, then SIGCONT so a stopped process can act on it.
//! 3. If the child has not exited [`Process::kill_after`] later ([`DEFAULT_KILL_AFTER`], 2 s,
//!    unless set), the group gets SIGKILL. Zero sends SIGKILL at once; [`Duration::MAX`]
//!    never does.
//! 4. Once the child (the group's leader) has exited, what is left of its group gets SIGKILL,
//!    and the child is reaped. The job resolves; no zombie and no grandchild in the group is
//!    left. This step also ends a child that exits by itself: a job leaves nothing running
//!    behind it.
//!
//! # One supervisor
//!
//! One thread, started with the first child, watches every child of the crate, however many:
//! on Linux it sleeps in `poll` on each child's pidfd (readable once the child exited), on each
//! captured pipe (non-blocking) and on a wake channel that a new child or a cancel writes to.
//! Where there is no pidfd (macOS, Linux before 5.3, a seccomp filter, a child whose exit a
//! tracer holds, or `TETHERED_PROCESS_WATCH=poll` in the environment) it looks at that child
//! with `waitid(WNOHANG | WNOWAIT)` between sleeps of 1 ms, doubling to 20 ms, back to 1 ms
//! after each signal. No SIGCHLD handler is installed. A child costs an entry in a map and its
//! descriptors, not a thread.
//!
//! # Why it never signals a stranger (pid reuse)
//!
//! A pid is free for the kernel to reuse as soon as its process has been reaped, so a signal
//! sent to a pid after the reap can kill an unrelated process. Here the supervisor owns every
//! [`std::process::Child`]: it alone reaps, it alone signals, and every signal comes before
//! the reap. It learns that the child exited with `waitid(WEXITED | WNOHANG | WNOWAIT)`, which
//! leaves the child a zombie: the zombie holds its pid, and the group id it lends its group,
//! until the reap. That is why step 4 can kill the rest of the group safely: after the reap,
//! if grandchildren had all died too, the group id could be reused; before it, it cannot. On
//! Linux it also signals the child through its pidfd.
//!
//! # Scopes
//!
//! [`Process::spawn_with`]`(JobOptions::new().in_scope(&scope))` starts the child in a
//! [`tethered::NativeScope`]; with
//! [`NativeScope::with_max_running(n)`](tethered::NativeScope::with_max_running) at most `n`
//! children are alive, and the others wait unspawned ([`ProcessJob::pid`] is `None`,
//! [`ProcessJob::started`] waits for the start). A job cancelled while it waits never starts
//! its child.
//!
//! # Limits
//!
//! - A descendant that leaves the group (`setsid`, or `setpgid` into another group) escapes
//!   its signals; a leader that moves itself to another group is still signalled itself.
//! - Something else in this process that reaps children it does not own (`waitpid(-1)`, or
//!   SIGCHLD set to `SIG_IGN`) takes the child's status; the supervisor notices, stops
//!   signalling that child at once, and reports [`Ended::Lost`].
//! - If this process dies without unwinding (SIGKILL, `abort`, `std::process::exit`), no
//!   destructor runs and its children are not stopped. Dropping a job starts the stop; the
//!   supervisor finishes it. A program that drops jobs just before it exits should wait for
//!   them first ([`Tethered::cancel_and_join`](tethered::Tethered::cancel_and_join), or
//!   [`tethered::testing::wait_all_returned`]), or the exit may orphan a child that was still
//!   being stopped.
//! - A child in a group of its own is in the terminal's background: give it a piped or null
//!   stdin, or turn [`Process::own_group`] off.
//!
//! # Pipes
//!
//! Piped stdout and stderr are read by the supervisor as they fill, so a child that writes
//! megabytes never blocks on a full pipe, and end up in [`ProcessOutput::stdout`] and
//! [`ProcessOutput::stderr`], up to [`Process::capture_limit`] bytes each (the rest is read and
//! discarded). After the reap the supervisor reads on until the pipes end, for at most a
//! second (a process outside the group may hold them:
//! [`Captured::still_open`](crate::Captured::still_open) says so); the pipes close with the
//! job. Turn capturing off per stream to read a pipe yourself ([`ProcessJob::take_stdout`]); a
//! piped stdin is always yours ([`ProcessJob::take_stdin`]).
//!
//! Unix only (Linux and macOS); on other targets the crate is empty. See the README for the
//! Windows plan.
//!
//! [`CancelReason::Dropped`]: tethered::CancelReason::Dropped
//! [`Duration::MAX`]: std::time::Duration::MAX

#![forbid(unsafe_code)]
#![warn(clippy::missing_errors_doc, clippy::missing_panics_doc)]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(unix)]
mod builder;
#[cfg(unix)]
mod child;
mod fault;
#[cfg(unix)]
mod job;
#[cfg(unix)]
mod launch;
#[cfg(all(unix, tethered_loom))]
#[doc(hidden)]
pub mod loom;
mod output;
#[cfg(unix)]
mod pipe;
#[cfg(unix)]
mod pool;
mod signal;
#[cfg(unix)]
mod supervisor;
#[cfg(unix)]
mod sync;
#[cfg(unix)]
mod target;

#[cfg(unix)]
pub use builder::{DEFAULT_CAPTURE_LIMIT, DEFAULT_KILL_AFTER, Process};
#[cfg(unix)]
pub use job::ProcessJob;
#[cfg(unix)]
pub use launch::StartedFuture;
pub use output::{Captured, Ended, ProcessOutput};
#[cfg(unix)]
pub use pool::{DEFAULT_MAX_FAILURES, Pool, PoolBuilder, PoolStats, Worker};
pub use signal::StopSignal;

// The README's example is a doc test too.
#[cfg(all(doctest, unix))]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
