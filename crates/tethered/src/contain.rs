//! Where a panic from user code goes: it is contained here, counted, and never reaches a caller
//! of this crate nor leaves its state half-changed.
//!
//! User code is more than closures and callbacks: dropping a value runs its `Drop`, and a panic
//! payload is such a value. `catch_unwind` hands the payload back, and dropping it can panic
//! again, so every payload is dropped by [`drop_contained`] too. A payload whose drop panics
//! once more is leaked on purpose (dropping it a third time could panic forever), and counted
//! in [`NativeStats::leaked_payloads`](crate::NativeStats::leaked_payloads).

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::stats;

/// Runs `f`, containing a panic: `Some(value)` if it returned, `None` if it panicked (its
/// payload was dropped, contained). The caller counts the panic where it knows what panicked.
pub(crate) fn run_contained<R>(f: impl FnOnce() -> R) -> Option<R> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(value) => Some(value),
        Err(payload) => {
            drop_payload(payload);
            None
        }
    }
}

/// Drops `value`, containing a panic from its `Drop`: the panic is counted in
/// [`stats()`](crate::stats)`.drop_panics` and goes no further (its payload is dropped the same
/// way; one whose own drop panics again is leaked, counted in `leaked_payloads`).
///
/// For a bridge that drops values it does not own the code of (a result nobody awaits any
/// more, a captured closure, an error carrying a panic payload) on a thread that must not
/// unwind: a loop's callback, a supervisor, a `Drop`. The panic hook still prints the panic.
///
/// ```
/// struct Grumpy;
/// impl Drop for Grumpy {
///     fn drop(&mut self) {
///         panic!("a `Drop` that panics");
///     }
/// }
///
/// let before = tethered::stats().drop_panics;
/// tethered::__private::drop_contained(Grumpy); // returns normally
/// assert!(tethered::stats().drop_panics > before);
/// ```
pub fn drop_contained<T>(value: T) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(value))) {
        stats::drop_panicked();
        drop_payload(payload);
    }
}

/// Runs `f`, catching a panic: `Err` holds its message and payload as a
/// [`JobPanic`](crate::JobPanic), whose drop is contained too. Nothing is counted: the caller
/// knows what panicked and reports it.
///
/// For a bridge that runs user code outside a job (converting a result for another language,
/// a user's hook) on a thread that must not unwind.
///
/// # Errors
///
/// The panic, as a [`JobPanic`](crate::JobPanic), if `f` panicked.
///
/// ```
/// let caught = tethered::__private::catch_panic(|| -> u32 { panic!("bad conversion") });
/// assert_eq!(caught.unwrap_err().message(), Some("bad conversion"));
/// assert_eq!(tethered::__private::catch_panic(|| 7).unwrap(), 7);
/// ```
pub fn catch_panic<R>(f: impl FnOnce() -> R) -> Result<R, crate::JobPanic> {
    catch_unwind(AssertUnwindSafe(f)).map_err(crate::JobPanic::new)
}

/// Drops a panic payload; one whose own drop panics is leaked, and counted.
pub(crate) fn drop_payload(payload: Box<dyn Any + Send>) {
    if let Err(again) = catch_unwind(AssertUnwindSafe(move || drop(payload))) {
        stats::payload_leaked();
        std::mem::forget(again);
    }
}

/// The message of a panic payload, if it is a string (as `panic!` with a message makes it).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&'static str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic without a message")
}
