//! What crates built on tethered need and applications do not: the runtime adapters, the
//! language bridges (`tethered-pyo3`, `tethered-napi`), a child-process supervisor, a foreign
//! event loop. Everything here is also how this family's own crates are written.
//!
//! - [`spawn_or`]: [`spawn`](crate::spawn) with the entry point's own default placement (an
//!   adapter's runtime pool).
//! - [`spawned_or_stopped`]: the handle an entry point that cannot return an error hands out.
//! - [`external`]: a job whose work runs elsewhere, reported through a
//!   [`Completer`](crate::Completer).
//! - [`catch_panic`] and [`drop_contained`]: the crate's own panic containment, for code that
//!   runs user code on a thread that must not unwind.
//! - [`PerProcess`]: a process-wide value (a supervisor thread) that a forked child makes
//!   afresh.
//! - [`error_chain`]: an error and its sources in one line.
//! - [`spin_until`] and [`SPIN`]: how a pool's thread between jobs watches for the next before
//!   it parks.

pub use crate::contain::{catch_panic, drop_contained};
pub use crate::native::external;
pub use crate::per_process::PerProcess;
pub use crate::spin::{SPIN, spin_until};

use crate::native::AbortableNative;
use crate::options::{JobOptions, Placement};
use crate::reason::CancelReason;
use crate::spawn_error::SpawnError;
use crate::spawner::Spawner;
use crate::token::CancelToken;

/// [`spawn`](crate::spawn), with `default` giving the spawner for an
/// [`Unplaced`](crate::Unplaced) job: how a runtime adapter's `spawn_native_with` puts jobs on
/// its runtime's blocking pool. `default` is called only for an unplaced job, so a job placed
/// in a scope or on a spawner never needs a runtime.
///
/// # Errors
///
/// `default`'s error (no runtime here), or [`spawn`](crate::spawn)'s.
///
/// ```
/// use tethered::{JobOptions, SpawnError, ThreadSpawner};
///
/// /// An adapter's entry point: unplaced jobs run on threads named `pool`.
/// fn spawn_on_my_pool<T: Send + 'static>(
///     options: JobOptions,
///     f: impl FnOnce(tethered::CancelToken) -> T + Send + 'static,
/// ) -> Result<tethered::AbortableNative<T>, SpawnError> {
///     tethered::bridge::spawn_or(options, || Ok(ThreadSpawner::new().name("pool")), f)
/// }
/// let job = spawn_on_my_pool(JobOptions::new(), |_| std::thread::current().name().map(str::to_owned))?;
/// assert_eq!(job.join_blocking()?.as_deref(), Some("pool"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn spawn_or<P, S, D, T, F>(
    options: JobOptions<P>,
    default: D,
    f: F,
) -> Result<AbortableNative<T>, SpawnError>
where
    P: Placement,
    S: Spawner,
    D: FnOnce() -> Result<S, SpawnError>,
    T: Send + 'static,
    F: FnOnce(CancelToken) -> T + Send + 'static,
{
    crate::native::spawn_or(options, default, f)
}

/// The handle an entry point that cannot return an error hands out: the spawned job, or, if a
/// pool that shuts down refused it ([`SpawnError::Shutdown`], [`SpawnError::Rejected`],
/// [`SpawnError::ScopeClosed`]), a handle already stopped with [`CancelReason::Shutdown`]
/// ([`AbortableNative::stopped`]), as tokio's own `spawn_blocking` handle then resolves to a
/// cancelled `JoinError`. Every adapter's `spawn_native` ends with it, so a `Drop` that
/// schedules clean-up while its runtime shuts down cannot abort the process.
///
/// # Panics
///
/// On any other error, with its message: no runtime ([`SpawnError::NoRuntime`]), no thread
/// from the OS ([`SpawnError::Thread`]), a spawner's own error. `spawn_blocking` and
/// `std::thread::spawn` panic there too.
///
/// ```
/// use tethered::{CancelReason, JobOptions, Runnable, SpawnError, Spawner};
///
/// struct Closed;
/// impl Spawner for Closed {
///     fn spawn(&self, _task: Runnable) -> Result<(), SpawnError> {
///         Err(SpawnError::shutdown("example pool"))
///     }
/// }
///
/// let job = tethered::bridge::spawned_or_stopped(tethered::spawn(JobOptions::new().on(Closed), |_| 1));
/// let err = job.join_blocking().unwrap_err();
/// assert_eq!(err.cancel_reason(), Some(CancelReason::Shutdown));
/// ```
#[track_caller]
pub fn spawned_or_stopped<T: Send + 'static>(
    spawned: Result<AbortableNative<T>, SpawnError>,
) -> AbortableNative<T> {
    match spawned {
        Ok(job) => job,
        Err(SpawnError::Shutdown { .. } | SpawnError::Rejected | SpawnError::ScopeClosed) => {
            AbortableNative::stopped(CancelReason::Shutdown)
        }
        Err(err) => panic!("{}", error_chain(&err)),
    }
}

/// `err`'s message followed by each of its sources', joined with ": ": the whole story in one
/// line, for a panic message or a log line (an error's own `Display` never repeats its
/// source).
///
/// ```
/// let err = tethered::SpawnError::other("no capacity left");
/// assert_eq!(err.to_string(), "the spawner failed");
/// assert_eq!(tethered::bridge::error_chain(&err), "the spawner failed: no capacity left");
/// ```
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut next = err.source();
    while let Some(source) = next {
        text.push_str(": ");
        text.push_str(&source.to_string());
        next = source.source();
    }
    text
}
