//! [`count_planned_panics`]: keeps panics a test raises on purpose off stderr.

use std::panic;
use std::sync::atomic::{AtomicU64, Ordering};

/// Installs a panic hook that counts (in `seen`) and hides the panics whose payload is
/// `planned`, `&str` or `String`, and hands every other panic to the hook it replaces. For
/// soaks that panic thousands of times on purpose; `std::panic::take_hook` removes it.
pub fn count_planned_panics(planned: &'static str, seen: &'static AtomicU64) {
    let previous = panic::take_hook();
    panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
        if message == Some(planned) {
            seen.fetch_add(1, Ordering::SeqCst);
        } else {
            previous(info);
        }
    }));
}
