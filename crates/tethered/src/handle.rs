//! [`Tethered`]: what every handle to tethered work has in common, so that timeouts, races and
//! other crates' handles (a child process, a Python job) compose with one another.

use std::future::Future;

use crate::error::NativeError;
use crate::native::AbortableNative;
use crate::reason::CancelReason;
use crate::token::CancelToken;

/// A handle to work tethered to the future that awaits it: it resolves to
/// `Result<Self::Value, NativeError>`, and it can be cancelled from the awaiting side with a
/// reason the work can read.
///
/// [`AbortableNative`] is one; crates built on tethered (a child process handle, a job behind a
/// foreign event loop) implement it too, so that [`CancelWhen`](crate::CancelWhen) and every
/// adapter's `timeout` accept them alike.
///
/// ```
/// use tethered::{AbortableNative, CancelReason, NativeError, Tethered};
///
/// // Anything `Tethered` can be raced against a signal.
/// fn stop_on<J: Tethered>(job: J) -> tethered::CancelWhen<J, std::future::Ready<()>> {
///     job.cancel_when(std::future::ready(()), CancelReason::Shutdown)
/// }
///
/// let job = AbortableNative::spawn(|token| token.wait());
/// let result = futures_executor::block_on(stop_on(job));
/// assert!(matches!(result, Err(NativeError::Cancelled(CancelReason::Shutdown))));
/// ```
pub trait Tethered: Future<Output = Result<Self::Value, NativeError>> + Unpin {
    /// What the work produces when it finishes.
    type Value;

    /// Cancels the work with `reason`: `true` if this call cancelled it, `false` if it was
    /// cancelled already or has finished (a finished job is left alone).
    fn cancel(&self, reason: CancelReason) -> bool;

    /// A token that is cancelled when the work is.
    fn token(&self) -> CancelToken;

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
}
