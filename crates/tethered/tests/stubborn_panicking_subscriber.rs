//! A `tracing` subscriber that panics on the stubborn jobs' warnings (user code reached from
//! the timer's thread and from a job's finish) neither wedges the job's handle nor stops the
//! timer: a second stubborn job is still listed, and both handles resolve.

#![cfg(feature = "tracing")]

use std::sync::mpsc;
use std::time::{Duration, Instant};

use tethered::{CancelReason, JobOptions, Tethered};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Metadata, Subscriber};

struct Panicking;

impl Subscriber for Panicking {
    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        *metadata.level() <= Level::WARN
    }
    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, _: &Event<'_>) {
        panic!("a subscriber that panics");
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

fn stubborn_job(name: &'static str) -> (tethered::AbortableNative<()>, mpsc::Sender<()>) {
    let (release, hold) = mpsc::channel::<()>();
    let (started, running) = mpsc::channel();
    let job = tethered::spawn(JobOptions::new().name(name), move |_token| {
        started.send(()).unwrap();
        let _ = hold.recv();
    })
    .unwrap();
    running.recv().unwrap();
    job.cancel(CancelReason::Requested);
    (job, release)
}

fn listed(name: &str) -> bool {
    tethered::stubborn_jobs()
        .iter()
        .any(|job| job.name.as_deref() == Some(name))
}

fn eventually(what: &str, mut condition: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < until, "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_panicking_subscriber_wedges_neither_the_handle_nor_the_timer() {
    tracing::subscriber::set_global_default(Panicking).unwrap();
    tethered::set_stubborn_after(Duration::from_millis(50));

    let (first, release_first) = stubborn_job("first");
    eventually("the first job listed", || listed("first"));
    let (second, release_second) = stubborn_job("second");
    eventually("the second job listed, by a timer that survived", || {
        listed("second")
    });

    // Each return is warned of too (a panic in the job's finish): the handles still resolve.
    drop(release_first);
    drop(release_second);
    for job in [first, second] {
        let (done, result) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = done.send(job.join_blocking().is_err());
        });
        assert_eq!(
            result.recv_timeout(Duration::from_secs(10)),
            Ok(true),
            "a handle never resolved"
        );
    }
    assert!(tethered::stubborn_jobs().is_empty());
}
