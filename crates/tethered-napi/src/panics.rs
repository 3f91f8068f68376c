//! Panics the crate catches are not printed: a closure's panic rejects its promise with
//! `ERR_NATIVE_PANIC` and its message, and a JavaScript program expects a rejected promise, not
//! Rust's panic message (and, with `RUST_BACKTRACE=1`, a backtrace) on its stderr for it.
//!
//! The first catch installs a panic hook that hands every panic to the hook it replaced, but
//! for panics raised on a thread while that thread runs code this crate catches the panics of
//! (a job's closure, the conversion of its value). `TETHERED_NAPI_PRINT_PANICS=1` in the
//! environment prints those too, for debugging. A job with `PanicPolicy::Abort` is printed
//! always: its panic ends the process.

use std::cell::Cell;
use std::sync::Once;

use tethered::JobPanic;

thread_local! {
    /// How deep this thread is in code whose panics the crate catches.
    static CATCHING: Cell<u32> = const { Cell::new(0) };
}

/// Runs `f`, whose panic the caller catches and reports: the panic hook stays quiet for it.
pub(crate) fn quietly<R>(f: impl FnOnce() -> R) -> R {
    install();
    struct Depth;
    impl Drop for Depth {
        fn drop(&mut self) {
            CATCHING.with(|depth| depth.set(depth.get().saturating_sub(1)));
        }
    }
    CATCHING.with(|depth| depth.set(depth.get() + 1));
    let _depth = Depth;
    f()
}

/// Runs `f`, catching its panic without printing it.
pub(crate) fn catch<R>(f: impl FnOnce() -> R) -> Result<R, JobPanic> {
    quietly(|| tethered::__private::catch_panic(f))
}

fn install() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let print_all = std::env::var_os("TETHERED_NAPI_PRINT_PANICS").is_some_and(|v| v == "1");
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // `try_with`: a panic while this thread's locals are torn down is printed.
            let caught = CATCHING.try_with(|depth| depth.get() > 0).unwrap_or(false);
            if print_all || !caught {
                previous(info);
            }
        }));
    });
}
