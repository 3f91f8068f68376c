//! Watching for work a short while before parking: what a thread between jobs does first, as
//! a parked thread costs its waker a wake-up of the thread and often of an idle CPU.

use std::time::{Duration, Instant};

/// How long a thread whose job returned watches for the next before it parks, by default.
///
/// A caller that awaits one short native call after another (a Python or JavaScript loop)
/// starts the next within tens of microseconds of the last one's end. A parked thread costs it
/// a wake-up: a futex call, a context switch and, on an idle CPU, the CPU's own wake-up (20–56
/// µs measured on a 2-core virtual machine, as long as the rest of the call). A thread that
/// spins this long takes the next job at once, for at most this much of one core after the
/// last job of a burst.
///
/// ```
/// assert!(tethered::__private::SPIN < std::time::Duration::from_millis(1));
/// ```
pub const SPIN: Duration = Duration::from_micros(50);

/// Spins until `ready` returns `true` (then returns `true`) or `limit` has passed (then returns
/// `false`). `ready` is called often, between [`spin_loop`](std::hint::spin_loop) hints: it
/// should be a load, without a lock, of a word the thread that hands work over writes (a hint,
/// checked again under the lock). A `limit` too long for the clock spins until `ready`.
///
/// The clock is read once per 64 calls of `ready`: a `limit` is honoured to within about a
/// microsecond. On a machine that runs one thread at a time, spinning would only hold off the
/// thread that hands the work over: `ready` is asked once and its answer returned.
///
/// ```
/// use std::sync::atomic::{AtomicBool, Ordering};
/// use std::time::Duration;
/// use tethered::__private::spin_until;
///
/// // What a pool's worker between jobs watches (the queue itself is behind a lock).
/// let job_queued = AtomicBool::new(false);
/// // Nothing is handed over within no time at all.
/// assert!(!spin_until(Duration::ZERO, || job_queued.load(Ordering::Relaxed)));
/// // What another thread does when it queues a job.
/// job_queued.store(true, Ordering::Relaxed);
/// assert!(spin_until(Duration::from_secs(5), || job_queued.load(Ordering::Relaxed)));
/// ```
pub fn spin_until(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    if crate::sync::parallelism() == 1 {
        return ready();
    }
    let until = Instant::now().checked_add(limit);
    loop {
        for _ in 0..64 {
            if ready() {
                return true;
            }
            std::hint::spin_loop();
        }
        if until.is_some_and(|until| Instant::now() >= until) {
            return ready();
        }
    }
}

#[cfg(all(test, not(tethered_loom)))]
mod tests {
    use super::*;

    #[test]
    fn spinning_gives_up_after_its_limit_and_answers_at_once_when_ready() {
        let started = Instant::now();
        assert!(!spin_until(Duration::from_millis(20), || false));
        if crate::sync::parallelism() == 1 {
            assert!(
                started.elapsed() < Duration::from_secs(1),
                "spun on one CPU"
            );
            let mut calls = 0;
            assert!(!spin_until(Duration::MAX, || {
                calls += 1;
                false
            }));
            assert_eq!(calls, 1, "asked more than once on one CPU");
            return;
        }
        assert!(started.elapsed() >= Duration::from_millis(20));
        let mut calls = 0;
        assert!(spin_until(Duration::MAX, || {
            calls += 1;
            calls == 3
        }));
        assert_eq!(calls, 3);
        assert!(spin_until(Duration::ZERO, || true));
    }
}
