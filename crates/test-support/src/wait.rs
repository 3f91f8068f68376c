//! Bounded waits and watchdogs, so that a broken behaviour fails its test instead of hanging the
//! suite.

use std::panic;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread;
use std::time::{Duration, Instant};

/// Polls `done` every millisecond for at most `limit`; whether it became true.
pub fn wait_until(limit: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if done() {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// [`wait_until`], failing the test if `done` is still false after `limit`.
#[track_caller]
pub fn wait_for(what: &str, limit: Duration, done: impl FnMut() -> bool) {
    assert!(
        wait_until(limit, done),
        "gave up after {limit:?} waiting for {what}"
    );
}

/// Runs `f` on a thread of its own and waits at most `limit` for it: the watchdog that keeps a
/// hang (say, a runtime drop that never returns) from stalling the suite. On a timeout the test
/// fails and the thread is left behind; a panic in `f` is the test's panic.
pub fn bounded<R, F>(what: &str, limit: Duration, f: F) -> R
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    Watchdog::start(what, f)
        .wait(limit)
        .unwrap_or_else(|| panic!("watchdog: {what} did not finish within {limit:?}"))
}

/// A closure running on a thread of its own, which the test waits for with a time limit and
/// may find still running: the runtime drop that naive jobs hang, say.
#[derive(Debug)]
pub struct Watchdog<R> {
    result: mpsc::Receiver<R>,
    /// `None` once the closure's value was handed out.
    worker: Option<thread::JoinHandle<()>>,
}

impl<R: Send + 'static> Watchdog<R> {
    /// Starts `f` on a thread named `what`.
    pub fn start<F>(what: &str, f: F) -> Self
    where
        F: FnOnce() -> R + Send + 'static,
    {
        let (done, result) = mpsc::channel();
        let worker = thread::Builder::new()
            .name(what.to_owned())
            .spawn(move || {
                let _ = done.send(f());
            })
            .expect("start the watched thread");
        Watchdog {
            result,
            worker: Some(worker),
        }
    }

    /// Waits at most `limit` for the closure: its value if it returned, `None` if it still
    /// runs (and may be waited for again). A panic in the closure is re-raised here.
    pub fn wait(&mut self, limit: Duration) -> Option<R> {
        let outcome = self.result.recv_timeout(limit);
        if let Err(RecvTimeoutError::Timeout) = outcome {
            return None;
        }
        let worker = self
            .worker
            .take()
            .expect("a watched closure returns once, and `wait` hands its value out once");
        match outcome {
            Ok(value) => {
                let _ = worker.join();
                Some(value)
            }
            Err(_disconnected) => match worker.join() {
                Err(payload) => panic::resume_unwind(payload),
                Ok(()) => unreachable!("the worker sends its result before it ends"),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_until_gives_up_after_its_limit() {
        let start = Instant::now();
        assert!(!wait_until(Duration::from_millis(20), || false));
        assert!(start.elapsed() >= Duration::from_millis(20));
        assert!(wait_until(Duration::ZERO, || true));
    }

    #[test]
    #[should_panic(expected = "gave up after")]
    fn wait_for_fails_the_test_when_the_condition_never_holds() {
        wait_for("nothing", Duration::from_millis(5), || false);
    }

    #[test]
    fn bounded_hands_back_the_closures_value() {
        assert_eq!(bounded("a quick closure", Duration::from_secs(5), || 7), 7);
    }

    #[test]
    #[should_panic(expected = "watchdog: a stuck closure did not finish")]
    fn bounded_fails_a_closure_that_overruns_its_limit() {
        bounded("a stuck closure", Duration::from_millis(20), || {
            thread::sleep(Duration::from_secs(2));
        });
    }

    #[test]
    #[should_panic(expected = "the closure's own panic")]
    fn bounded_reraises_the_closures_panic() {
        bounded("a panicking closure", Duration::from_secs(5), || {
            panic!("the closure's own panic")
        });
    }

    #[test]
    fn a_watchdog_can_be_waited_for_again_after_a_timeout() {
        let (release, released) = mpsc::channel::<()>();
        let mut watched = Watchdog::start("a held closure", move || {
            let _ = released.recv();
            5
        });
        assert_eq!(watched.wait(Duration::from_millis(20)), None);
        release.send(()).unwrap();
        assert_eq!(watched.wait(Duration::from_secs(5)), Some(5));
    }
}
