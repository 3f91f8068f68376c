//! Finding native code that ignores its token: a job that honours its cancel and one that does
//! not, read through `cancel_stats()` (counts by reason, cancel-to-return per name),
//! `stubborn_jobs()` (listed while it runs on, unlisted when it returns), an abandon past a
//! grace, and (with the `tracing` feature) the warnings that name the stubborn job.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use tethered::{CancelReason, CancelStats, Cause, JobOptions, NativeError, Tethered};

/// Polls `f` until it returns `Some`, for at most 10 s.
fn eventually<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(value) = f() {
            return value;
        }
        assert!(Instant::now() < until, "never: {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// A job named `name` that signals once it runs, then runs `body`.
fn started<P: tethered::Placement>(
    options: JobOptions<P>,
    body: impl FnOnce(tethered::CancelToken) + Send + 'static,
) -> tethered::AbortableNative<()> {
    let (tx, rx) = mpsc::channel();
    let job = tethered::spawn(options, move |token| {
        tx.send(()).unwrap();
        body(token);
    })
    .unwrap();
    rx.recv().unwrap();
    job
}

fn delta(after: &CancelStats, before: &CancelStats) -> [u64; 3] {
    [
        after.reached_running.total() - before.reached_running.total(),
        after.returned_after_cancel.total() - before.returned_after_cancel.total(),
        after.abandoned.total() - before.abandoned.total(),
    ]
}

/// The counts and `stubborn_after` are process-wide: this binary's tests take turns.
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn a_job_that_ignores_its_token_is_listed_counted_and_timed_and_one_that_honours_it_is_not() {
    let _serial = serial();
    #[cfg(feature = "tracing")]
    let lines = collect_tracing();
    tethered::set_stubborn_after(Duration::from_millis(200));

    // A job that honours its cancel: counted, timed, never listed.
    let before = tethered::cancel_stats();
    let honest = started(JobOptions::new().name("honest"), |token| {
        token.wait();
    });
    assert!(honest.cancel(CancelReason::Timeout));
    assert!(honest.join_blocking().unwrap_err().is_cancelled());
    let after = tethered::cancel_stats();
    assert_eq!(delta(&after, &before), [1, 1, 0]);
    assert_eq!(
        after.reached_running.timeout - before.reached_running.timeout,
        1
    );
    assert_eq!(
        after.returned_after_cancel.timeout - before.returned_after_cancel.timeout,
        1
    );
    let timed = after.cancel_to_return("honest").expect("timed by name");
    assert_eq!(timed.count, 1);
    assert!(timed.max < Duration::from_secs(1), "{timed:?}");
    assert_eq!(timed.buckets.iter().sum::<u64>(), 1);
    assert!(timed.quantile(0.5).unwrap() <= timed.max.max(Duration::from_micros(10)));
    assert_eq!(after.stubborn, before.stubborn);

    // A job that ignores its cancel: listed past the threshold with its reason and cause,
    // counted as reached but not returned, until it returns.
    let (release, hold) = mpsc::channel::<()>();
    let stubborn = started(JobOptions::new().name("legacy-scan"), move |_token| {
        let _ = hold.recv(); // never looks at its token
    });
    let id = stubborn.id();
    assert!(stubborn.cancel_with_cause(CancelReason::Dropped, Cause::msg("client went away")));
    let listed = eventually("listed as stubborn", || {
        tethered::stubborn_jobs()
            .into_iter()
            .find(|job| job.id == id)
    });
    assert_eq!(listed.name.as_deref(), Some("legacy-scan"));
    assert_eq!(listed.reason, CancelReason::Dropped);
    assert_eq!(
        listed.cause.map(|cause| cause.to_string()).as_deref(),
        Some("client went away")
    );
    assert!(listed.since_cancel >= Duration::from_millis(200));
    let meanwhile = tethered::cancel_stats();
    assert_eq!(
        delta(&meanwhile, &after),
        [1, 0, 0],
        "reached, not returned"
    );
    assert_eq!(meanwhile.stubborn, after.stubborn + 1);
    assert!(meanwhile.cancel_to_return("legacy-scan").is_none());

    drop(release);
    assert!(stubborn.join_blocking().unwrap_err().is_cancelled());
    assert!(tethered::stubborn_jobs().iter().all(|job| job.id != id));
    let returned = tethered::cancel_stats();
    assert_eq!(delta(&returned, &meanwhile), [0, 1, 0]);
    assert_eq!(
        returned.returned_after_cancel.dropped - meanwhile.returned_after_cancel.dropped,
        1
    );
    let slow = returned.cancel_to_return("legacy-scan").unwrap();
    assert_eq!(slow.count, 1);
    assert!(slow.max >= Duration::from_millis(200), "{slow:?}");

    // A handle that stops waiting after its grace: abandoned, by reason.
    let (release, hold) = mpsc::channel::<()>();
    let abandoned = started(
        JobOptions::new()
            .name("abandoned")
            .grace(Duration::from_millis(20)),
        move |_token| {
            let _ = hold.recv();
        },
    );
    assert!(abandoned.cancel(CancelReason::Shutdown));
    assert!(matches!(
        abandoned.join_blocking(),
        Err(NativeError::Abandoned {
            reason: CancelReason::Shutdown,
            ..
        })
    ));
    let gave_up = tethered::cancel_stats();
    assert_eq!(gave_up.abandoned.shutdown - returned.abandoned.shutdown, 1);
    drop(release);
    eventually("the abandoned job returned", || {
        (tethered::stats().running == 0).then_some(())
    });

    // A job cancelled before it starts reached no running work: nothing recorded.
    let before = tethered::cancel_stats();
    let never = tethered::spawn(JobOptions::new().timeout(Duration::ZERO), |_| ()).unwrap();
    assert!(never.join_blocking().unwrap_err().is_cancelled());
    assert_eq!(delta(&tethered::cancel_stats(), &before), [0, 0, 0]);

    #[cfg(feature = "tracing")]
    {
        let lines = lines.lock().unwrap().join("\n");
        println!("{lines}");
        assert!(
            lines.contains("still running") && lines.contains("legacy-scan"),
            "{lines}"
        );
        assert!(lines.contains("client went away"), "the cause: {lines}");
        assert!(lines.contains("stubborn native job returned"), "{lines}");
        assert!(
            !lines.contains("honest"),
            "a job that honours its cancel is never warned of"
        );
    }
    tethered::set_stubborn_after(Duration::from_secs(1));
}

#[cfg(feature = "tracing")]
fn collect_tracing() -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    use std::fmt::Debug;
    use std::sync::{Arc, Mutex};
    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Level, Metadata, Subscriber};

    struct Warnings(Arc<Mutex<Vec<String>>>);
    struct Text(String);
    impl Visit for Text {
        fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
            self.0.push_str(&format!(" {}={:?}", field.name(), value));
        }
    }
    impl Subscriber for Warnings {
        fn enabled(&self, metadata: &Metadata<'_>) -> bool {
            *metadata.level() <= Level::WARN
        }
        fn new_span(&self, _: &Attributes<'_>) -> Id {
            Id::from_u64(1)
        }
        fn record(&self, _: &Id, _: &Record<'_>) {}
        fn record_follows_from(&self, _: &Id, _: &Id) {}
        fn event(&self, event: &Event<'_>) {
            let mut text = Text(String::new());
            event.record(&mut text);
            self.0.lock().unwrap().push(text.0);
        }
        fn enter(&self, _: &Id) {}
        fn exit(&self, _: &Id) {}
    }
    let lines = Arc::new(Mutex::new(Vec::new()));
    tracing::subscriber::set_global_default(Warnings(lines.clone())).unwrap();
    lines
}

#[test]
fn a_job_cancelled_through_a_parent_is_watched_too() {
    let _serial = serial();
    let parent = tethered::CancelSource::new();
    let before = tethered::cancel_stats();
    let job = started(
        JobOptions::new()
            .name("child-of-request")
            .child_of(&parent.token()),
        |token| {
            token.wait();
        },
    );
    parent.cancel(CancelReason::Failed);
    assert!(job.join_blocking().unwrap_err().is_cancelled());
    let after = tethered::cancel_stats();
    assert!(after.reached_running.failed > before.reached_running.failed);
    assert!(after.cancel_to_return("child-of-request").is_some());
}

#[test]
fn a_scope_cancel_and_a_shutdown_reach_the_watch() {
    let _serial = serial();
    let scope = tethered::NativeScope::new();
    let before = tethered::cancel_stats();
    let in_scope = || JobOptions::new().name("in-scope").in_scope(&scope);
    let cancelled = started(in_scope(), |token| {
        token.wait();
    });
    scope.cancel_all(CancelReason::Requested);
    assert!(cancelled.join_blocking().unwrap_err().is_cancelled());
    let shut = started(in_scope(), |token| {
        token.wait();
    });
    let _ = scope.shutdown_blocking(Duration::from_secs(10));
    assert!(shut.join_blocking().unwrap_err().is_cancelled());
    let after = tethered::cancel_stats();
    assert_eq!(
        after.reached_running.requested - before.reached_running.requested,
        1
    );
    assert_eq!(
        after.returned_after_cancel.shutdown - before.returned_after_cancel.shutdown,
        1
    );
    assert_eq!(after.cancel_to_return("in-scope").unwrap().count, 2);
}

/// One sweep serves every watched job: a job cancelled under a shorter threshold than the
/// pending sweep's is still listed on time, the later one only at its own deadline, and a
/// zero threshold lists a job at once.
#[test]
fn each_job_is_listed_at_its_own_deadline() {
    let _serial = serial();
    let ignoring = |name: &'static str| {
        let (release, hold) = mpsc::channel::<()>();
        let job = started(JobOptions::new().name(name), move |_token| {
            let _ = hold.recv();
        });
        (job, release)
    };
    let listed = |job: &tethered::AbortableNative<()>| {
        tethered::stubborn_jobs()
            .iter()
            .any(|stubborn| stubborn.id == job.id())
    };

    tethered::set_stubborn_after(Duration::from_secs(30));
    let (late, release_late) = ignoring("late");
    late.cancel(CancelReason::Requested);
    tethered::set_stubborn_after(Duration::from_millis(100));
    let (soon, release_soon) = ignoring("soon");
    soon.cancel(CancelReason::Requested);
    eventually("the job with the shorter threshold listed", || {
        listed(&soon).then_some(())
    });
    assert!(!listed(&late), "listed 30 s early");

    tethered::set_stubborn_after(Duration::ZERO);
    let (now, release_now) = ignoring("now");
    now.cancel(CancelReason::Requested);
    eventually("the job with a zero threshold listed", || {
        listed(&now).then_some(())
    });
    assert!(!listed(&late), "listed 30 s early");

    for release in [release_late, release_soon, release_now] {
        drop(release);
    }
    for job in [late, soon, now] {
        assert!(job.join_blocking().unwrap_err().is_cancelled());
    }
    assert!(tethered::stubborn_jobs().is_empty());
    tethered::set_stubborn_after(Duration::from_secs(1));
}
