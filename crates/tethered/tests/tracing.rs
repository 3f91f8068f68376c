//! The `tracing` feature: a span per job and events along its life.
#![cfg(feature = "tracing")]

use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use tethered::{CancelReason, JobOptions, Tethered};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

/// Collects every event's message and fields, and every span's name and fields, as text.
#[derive(Clone, Default)]
struct Collector {
    lines: Arc<Mutex<Vec<String>>>,
    next: Arc<AtomicU64>,
}

struct Text(String);

impl Visit for Text {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.push_str(&format!(" {}={:?}", field.name(), value));
    }
}

impl Subscriber for Collector {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut text = Text(format!("span {}", span.metadata().name()));
        span.record(&mut text);
        self.lines.lock().unwrap().push(text.0);
        Id::from_u64(self.next.fetch_add(1, Ordering::Relaxed) + 1)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut text = Text(format!("event {}", event.metadata().level()));
        event.record(&mut text);
        self.lines.lock().unwrap().push(text.0);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}

#[test]
fn a_job_traces_spawn_cancel_return_and_abandon() {
    let collector = Collector::default();
    tracing::subscriber::set_global_default(collector.clone()).unwrap();

    let (started_tx, started) = mpsc::channel();
    let job = tethered::spawn(
        JobOptions::new()
            .name("traced")
            .on(tethered::ThreadSpawner::new()),
        move |token| {
            started_tx.send(()).unwrap();
            token.wait()
        },
    )
    .unwrap();
    started.recv().unwrap();
    job.cancel(CancelReason::Timeout);
    assert!(job.join_blocking().unwrap_err().is_cancelled());

    let (started_tx, started) = mpsc::channel();
    let (release_tx, release) = mpsc::channel::<()>();
    let stuck = tethered::spawn(
        JobOptions::new()
            .name("stuck")
            .grace(Duration::from_millis(5))
            .on(tethered::ThreadSpawner::new()),
        move |_| {
            started_tx.send(()).unwrap();
            release.recv().unwrap();
        },
    )
    .unwrap();
    started.recv().unwrap();
    stuck.cancel(CancelReason::Requested);
    assert!(stuck.join_blocking().unwrap_err().is_abandoned());
    release_tx.send(()).unwrap();
    tethered::testing::assert_all_returned(Duration::from_secs(10));

    // A job cancelled through its parent token: the cancel reaches it from the parent's walk
    // of its children, and is traced once. (Whichever of the job's return and its own cancel
    // callback comes first traces the cancel; the other does not.)
    let source = tethered::CancelSource::new();
    let (started_tx, started) = mpsc::channel();
    let quick = tethered::spawn(
        JobOptions::new()
            .name("quick")
            .child_of(&source.token())
            .on(tethered::ThreadSpawner::new()),
        move |token| {
            started_tx.send(()).unwrap();
            token.wait();
        },
    )
    .unwrap();
    started.recv().unwrap();
    let canceller = std::thread::spawn(move || source.cancel(CancelReason::Shutdown));
    assert!(quick.join_blocking().unwrap_err().is_cancelled());
    canceller.join().unwrap();

    let panicking = tethered::spawn(
        JobOptions::new().on(tethered::ThreadSpawner::new()),
        |_| -> () { panic!("traced panic") },
    )
    .unwrap();
    assert!(panicking.join_blocking().is_err());

    let lines = collector.lines.lock().unwrap().join("\n");
    assert_eq!(
        lines.matches("message=native job cancelled").count(),
        3,
        "each of the three cancelled jobs traces its cancel once:\n{lines}"
    );
    assert_eq!(
        lines
            .matches("message=native job returned after its cancel")
            .count(),
        3,
        "the three cancelled jobs returned, and say so:\n{lines}"
    );
    for expected in [
        "span tethered.job id=",
        "name=\"traced\"",
        "message=native job spawned",
        "message=native job cancelled reason=the deadline passed",
        "message=native job returned after its cancel",
        "cancel_to_return_us=",
        "message=native job abandoned",
        "message=\"traced panic\"",
    ] {
        assert!(
            lines.contains(expected),
            "missing {expected:?} in:\n{lines}"
        );
    }
}
