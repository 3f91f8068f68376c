//! Every value a user holds can cross `catch_unwind` without `AssertUnwindSafe`: none of them is
//! left half-changed by a panic (no code of the crate panics while it changes shared state, and
//! every lock ignores poisoning), so each is `UnwindSafe` and `RefUnwindSafe`, as `anyhow::Error`
//! and `std::sync::Mutex` are.

use std::panic::{RefUnwindSafe, UnwindSafe};

use tethered::*;

fn unwind_safe<T: UnwindSafe + RefUnwindSafe>() {}

#[test]
fn every_value_a_user_holds_is_unwind_safe() {
    unwind_safe::<Armed<std::net::TcpStream>>();
    unwind_safe::<CallbackGuard>();
    unwind_safe::<Completer<u32>>();
    unwind_safe::<NativeError<u32>>();
    unwind_safe::<GroupFailure>();
    unwind_safe::<JobGroup<u32, std::io::Error>>();
    unwind_safe::<JobId>();
    unwind_safe::<AbortHandle>();
    unwind_safe::<AbortableNative<u32>>();
    unwind_safe::<JobOptions>();
    unwind_safe::<JobOptions<InScope>>();
    unwind_safe::<JobPanic>();
    unwind_safe::<PanicPolicy>();
    unwind_safe::<CancelReason>();
    unwind_safe::<Cancelled>();
    unwind_safe::<Cause>();
    unwind_safe::<ShutdownReport>();
    unwind_safe::<Straggler>();
    unwind_safe::<NativeScope>();
    unwind_safe::<ScopeShutdown>();
    unwind_safe::<WaitIdle>();
    unwind_safe::<SpawnError>();
    unwind_safe::<Runnable>();
    unwind_safe::<NativeStats>();
    unwind_safe::<ScopeStats>();
    unwind_safe::<ThreadSpawner>();
    unwind_safe::<CancelGuard>();
    unwind_safe::<CancelSource>();
    unwind_safe::<CancelToken>();
    unwind_safe::<WaitCancelled>();
    unwind_safe::<Timeout<AbortableNative<u32>>>();
}
