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

/// Drops `value`, containing a panic from its `Drop`: counted in `stats().drop_panics`.
pub(crate) fn drop_contained<T>(value: T) {
    if let Err(payload) = catch_unwind(AssertUnwindSafe(move || drop(value))) {
        stats::drop_panicked();
        drop_payload(payload);
    }
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
