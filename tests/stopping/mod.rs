//! The bounds and the wait shared by the naive-versus-tethered tests of the engine and
//! blocked-call examples.

#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long a stopped job may take to return: far more than it needs (well under 1 ms here).
pub(crate) const STOPS_WITHIN: Duration = Duration::from_secs(2);
/// How long to wait for something that should happen.
pub(crate) const PATIENCE: Duration = Duration::from_secs(5);
/// How long the caller waits before giving up.
pub(crate) const GIVE_UP_AFTER: Duration = Duration::from_millis(100);

/// Waits until `flag` is set; whether it was within [`PATIENCE`].
pub(crate) fn wait_for(flag: &AtomicBool) -> bool {
    let deadline = Instant::now() + PATIENCE;
    while !flag.load(Ordering::SeqCst) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    true
}
