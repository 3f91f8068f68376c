//! [`Probe`]: times a tethered job's closure from its cancel to its return.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tethered::{CancelReason, CancelToken};

use crate::bounds::PATIENCE;
use crate::wait::wait_for;
use crate::work::{slices_until, spin_until};

/// What one job's closure did and when, written from the closure's thread and the cancelling
/// one.
#[derive(Debug, Default)]
struct Timeline {
    started: AtomicBool,
    /// When the test triggered the cancel, or the earliest moment it can have happened (a
    /// timer's deadline): set by [`Probe::mark_cancel`].
    marked_at: OnceLock<Instant>,
    /// When an `on_cancel` callback saw the cancel: inside the cancel call, after the flag was
    /// published, so possibly after a closure that saw the flag already returned.
    cancelled_at: OnceLock<Instant>,
    returned_at: OnceLock<Instant>,
    /// Written before `returned_at`: whoever sees the return may read it.
    reason: OnceLock<Option<CancelReason>>,
}

/// Times one tethered job: when it started, when its token was cancelled, when its closure
/// returned and with which reason it saw. Clones share the timeline.
#[derive(Clone, Debug, Default)]
pub struct Probe(Arc<Timeline>);

impl Probe {
    /// A probe that has seen nothing yet.
    pub fn new() -> Self {
        Probe::default()
    }

    /// The scenarios' job: spins on `token.is_cancelled()` and returns once it sees the cancel.
    pub fn spinning_job(&self) -> impl FnOnce(CancelToken) + Send + 'static {
        let probe = self.clone();
        move |token| probe.run_tethered(&token, || spin_until(|| token.is_cancelled()))
    }

    /// Blocking work in 1 ms steps (slept), checking the token between steps: the shape of a
    /// job doing blocking I/O, for scenarios that run many jobs at once, where 50 busy threads
    /// on a small machine would time the OS scheduler instead of the cancel.
    pub fn stepping_job(&self) -> impl FnOnce(CancelToken) + Send + 'static {
        let probe = self.clone();
        move |token| probe.run_tethered(&token, || slices_until(|| token.is_cancelled()))
    }

    /// Runs `body` as the closure of the job that owns `token`, recording its start, the moment
    /// the token is cancelled (from an `on_cancel` callback, on the cancelling thread), the
    /// reason the closure saw, and its return.
    pub fn run_tethered<R>(&self, token: &CancelToken, body: impl FnOnce() -> R) -> R {
        // Registered before the start is published, so a test that cancels once it sees the
        // start is always timed; detached, so a closure that returns before the cancelling
        // thread reaches its callbacks still gets its cancel timed.
        let timeline = self.0.clone();
        token
            .on_cancel(move |_| {
                let _ = timeline.cancelled_at.set(Instant::now());
            })
            .detach();
        self.0.started.store(true, Ordering::SeqCst);
        let value = body();
        let _ = self.0.reason.set(token.reason());
        let _ = self.0.returned_at.set(Instant::now());
        value
    }

    /// Records when the test triggers the cancel (or the earliest moment the cancel can
    /// happen, e.g. a timer's deadline): then the measured time starts there, an upper bound.
    pub fn mark_cancel(&self, at: Instant) {
        let _ = self.0.marked_at.set(at);
    }

    /// Whether the closure has started.
    pub fn started(&self) -> bool {
        self.0.started.load(Ordering::SeqCst)
    }

    /// Waits (at most [`PATIENCE`]) for the closure to start.
    #[track_caller]
    pub fn wait_started(&self) {
        wait_for("the job's closure to start", PATIENCE, || self.started());
    }

    /// Whether the closure has returned.
    fn returned(&self) -> bool {
        self.0.returned_at.get().is_some()
    }

    /// Waits (at most [`PATIENCE`]) for the closure to return and gives the moment it did.
    #[track_caller]
    pub fn returned_at(&self) -> Instant {
        wait_for("the job's closure to return", PATIENCE, || self.returned());
        *self.0.returned_at.get().expect("waited for above")
    }

    /// The reason the closure saw when it returned.
    pub fn reason(&self) -> Option<CancelReason> {
        self.0.reason.get().cloned().flatten()
    }

    /// Waits for the closure to return and gives the time from the cancel to its return. The
    /// start is the test's mark if it made one, else the callback's time (zero if the closure
    /// saw the flag before the cancelling thread ran the callback).
    #[track_caller]
    pub fn cancel_to_return(&self) -> Duration {
        let returned = self.returned_at();
        // The cancelling thread runs the callback after publishing the cancel, so a closure
        // that saw the flag can return before the timestamp exists.
        wait_for("the cancel to be recorded", PATIENCE, || {
            self.cancelled_at().is_some()
        });
        returned.saturating_duration_since(self.cancelled_at().expect("waited for above"))
    }

    /// The test's mark if it made one, else the moment the callback saw the cancel.
    fn cancelled_at(&self) -> Option<Instant> {
        let timeline = &self.0;
        timeline
            .marked_at
            .get()
            .or(timeline.cancelled_at.get())
            .copied()
    }

    /// Waits for the closure to return and for the `on_cancel` callback, and gives the time
    /// from the callback (inside the cancel call) to the return; zero if the closure returned
    /// first. For cancels fired by a timer, whose exact moment the test cannot mark.
    #[track_caller]
    pub fn callback_to_return(&self) -> Duration {
        let returned = self.returned_at();
        wait_for("the cancel callback to run", PATIENCE, || {
            self.0.cancelled_at.get().is_some()
        });
        let seen = self.0.cancelled_at.get().expect("waited for above");
        returned.saturating_duration_since(*seen)
    }
}

#[cfg(test)]
mod tests {
    use std::thread;

    use tethered::CancelSource;

    use super::*;

    #[test]
    fn a_probe_times_a_spinning_closure_from_its_cancel_to_its_return() {
        let probe = Probe::new();
        let source = CancelSource::new();
        let job = probe.spinning_job();
        let token = source.token();
        let closure = thread::spawn(move || job(token));
        probe.wait_started();
        assert!(!probe.returned());
        source.cancel(CancelReason::Timeout);
        let took = probe.cancel_to_return();
        assert!(took < PATIENCE, "{took:?}");
        assert!(probe.callback_to_return() <= took + Duration::from_secs(1));
        assert_eq!(probe.reason(), Some(CancelReason::Timeout));
        closure.join().unwrap();
    }

    #[test]
    fn a_mark_is_the_start_of_the_measured_time() {
        let probe = Probe::new();
        let source = CancelSource::new();
        let marked = Instant::now();
        probe.mark_cancel(marked);
        source.cancel(CancelReason::Requested);
        probe.run_tethered(&source.token(), || thread::sleep(Duration::from_millis(5)));
        assert!(probe.cancel_to_return() >= Duration::from_millis(5));
        assert_eq!(
            probe.returned_at().duration_since(marked),
            probe.cancel_to_return()
        );
    }
}
