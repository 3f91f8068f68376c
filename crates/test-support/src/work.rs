//! The two shapes of blocking work the scenarios run until told to stop.

use std::thread;
use std::time::Duration;

/// Busy work until `stop()`: the CPU-burning shape of the leak.
pub fn spin_until(stop: impl Fn() -> bool) {
    while !stop() {
        for _ in 0..64 {
            std::hint::spin_loop();
        }
    }
}

/// Work in 1 ms slices (slept, to spare a small machine's cores) until `stop()`: the shape of a
/// job doing blocking I/O or waiting on a device, for scenarios that run many jobs at once,
/// where 50 busy threads on 2 cores would time the OS scheduler instead of the cancel.
pub(crate) fn slices_until(stop: impl Fn() -> bool) {
    while !stop() {
        thread::sleep(Duration::from_millis(1));
    }
}
