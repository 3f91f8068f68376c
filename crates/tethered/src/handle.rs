//! [`Tethered`]: what every handle to tethered work has in common, so that timeouts, races and
//! other crates' handles (a child process, a Python job) compose with one another.

use std::future::Future;
use std::time::Duration;

use crate::error::NativeError;
use crate::native::AbortableNative;
use crate::reason::CancelReason;
use crate::token::CancelToken;

/// A handle to work tethered to the future that awaits it: it resolves to
/// `Result<Self::Value, NativeError<Self::Value>>` (read the same way for every handle and
/// whoever stopped the work: see [`NativeError`]), and it can be cancelled from the awaiting
/// side with a reason the work can read.
///
/// [`AbortableNative`] is one; crates built on tethered (a child process handle, a job behind a
/// foreign event loop) implement it too, so that [`CancelWhen`](crate::CancelWhen) and every
/// adapter's `timeout` accept them alike. `&mut J` is one too: time out, keep the handle, and
/// then wait for what the work returns.
///
/// ```
/// use tethered::{AbortableNative, CancelReason, NativeError, Tethered};
///
/// let mut job = AbortableNative::spawn(|token| {
///     let mut steps = 0u64;
///     while !token.is_cancelled() {
///         steps += 1;
///     }
///     steps
/// });
/// // Stop waiting at a signal (here one that is ready at once), but keep the handle...
/// let signal = std::future::ready(());
/// let result = match futures_executor::block_on((&mut job).cancel_when(signal, CancelReason::Timeout)) {
///     // ...to wait, if the closure still ran, until it has stopped, for what it returned.
///     Err(NativeError::Abandoned { .. }) => futures_executor::block_on(job),
///     // (It had not started, or it stopped at once: that is its answer already.)
///     answered => answered,
/// };
/// assert_eq!(result.unwrap_err().cancel_reason(), Some(&CancelReason::Timeout));
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tethered handle",
    label = "expected a tethered handle (`AbortableNative`, `ProcessJob`, or `&mut` one of them)",
    note = "a spawn that can fail returns `Result<handle, SpawnError>`: add `?` (or handle the error) before timing out or awaiting the handle",
    note = "to time out and keep the handle, pass `&mut job`, then await `job` for what the work returned"
)]
pub trait Tethered: Future<Output = Result<Self::Value, NativeError<Self::Value>>> + Unpin {
    /// What the work produces when it finishes.
    type Value;

    /// Cancels the work with `reason`: `true` if this call cancelled it, `false` if it was
    /// cancelled already or has finished (a finished job is left alone).
    fn cancel(&self, reason: CancelReason) -> bool;

    /// A token that is cancelled when the work is.
    fn token(&self) -> CancelToken;

    /// Cancels the work with [`CancelReason::Timeout`] once `delay` has passed, unless it
    /// finished first; awaiting the handle then waits for what the work returned. "Time out,
    /// then wait until the work has stopped", on the crate's own timer (no runtime needed); the
    /// deadline is the work's token's ([`CancelToken::deadline`]).
    ///
    /// # Errors
    ///
    /// Only if the timer thread is not running yet and the OS refuses to start it.
    fn cancel_after(&self, delay: Duration) -> std::io::Result<()>;

    /// Races the work against `signal`; see [`CancelWhen`](crate::CancelWhen).
    fn cancel_when<S: Future>(self, signal: S, reason: CancelReason) -> crate::CancelWhen<Self, S>
    where
        Self: Sized,
    {
        crate::CancelWhen::new(self, signal, reason)
    }
}

impl<T> Tethered for AbortableNative<T> {
    type Value = T;

    fn cancel(&self, reason: CancelReason) -> bool {
        AbortableNative::cancel(self, reason)
    }

    fn token(&self) -> CancelToken {
        AbortableNative::token(self)
    }

    fn cancel_after(&self, delay: Duration) -> std::io::Result<()> {
        AbortableNative::cancel_after(self, delay)
    }
}

/// A borrowed handle is a handle: a timeout on `&mut job` stops waiting at its deadline and
/// leaves `job` to be awaited for what the work returned.
impl<J: Tethered + ?Sized> Tethered for &mut J {
    type Value = J::Value;

    fn cancel(&self, reason: CancelReason) -> bool {
        (**self).cancel(reason)
    }

    fn token(&self) -> CancelToken {
        (**self).token()
    }

    fn cancel_after(&self, delay: Duration) -> std::io::Result<()> {
        (**self).cancel_after(delay)
    }
}
