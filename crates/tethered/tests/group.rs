//! `JobGroup`: the first failure stops the rest, and the siblings read what failed, typed, as
//! the very error the failing job returned.

use std::error::Error as _;
use std::io;
use std::sync::{Arc, mpsc};

use tethered::{CancelReason, Cause, GroupFailure, JobGroup, JobOptions, NativeError};

fn join_all<T: Send + 'static, E: std::error::Error + Send + Sync + 'static>(
    group: &mut JobGroup<T, E>,
) -> Vec<tethered::Joined<T, E>> {
    let mut results = Vec::new();
    while let Some(joined) = futures_executor::block_on(group.join_next()) {
        results.push(joined);
    }
    results
}

#[test]
fn a_siblings_cause_is_the_failing_jobs_own_error_typed_and_shared() {
    let mut group: JobGroup<(), io::Error> = JobGroup::new();
    let (seen_tx, seen) = mpsc::channel();
    let (started_tx, started) = mpsc::channel();
    group
        .spawn(JobOptions::new().name("render"), move |token| {
            started_tx.send(()).unwrap();
            token.wait();
            seen_tx
                .send(token.cause().expect("a failure gives a cause"))
                .unwrap();
            Ok(())
        })
        .unwrap();
    // Running before its sibling fails: a job cancelled before it starts never runs at all.
    started.recv().unwrap();
    group
        .spawn(JobOptions::new().name("fetch"), |_| {
            Err(io::Error::new(io::ErrorKind::ConnectionRefused, "refused"))
        })
        .unwrap();
    let results = join_all(&mut group);
    let cause = seen.recv().unwrap();

    let failure = cause
        .downcast_ref::<GroupFailure>()
        .expect("the cause is a GroupFailure");
    assert_eq!(failure.name(), Some("fetch"));
    let io_error = cause
        .downcast_ref::<io::Error>()
        .expect("the failing job's io::Error is found through the failure");
    assert_eq!(io_error.kind(), io::ErrorKind::ConnectionRefused);
    let source = failure
        .source()
        .expect("a failure has the job's error as its source");
    assert!(source.is::<io::Error>(), "source: {source:?}");

    // The very value the failing job's result holds, not a copy of its text.
    let returned: Vec<&Arc<io::Error>> = results
        .iter()
        .filter_map(|joined| match joined {
            Ok(Err(error)) => Some(error),
            _ => None,
        })
        .collect();
    assert_eq!(returned.len(), 1, "one job failed");
    assert!(
        std::ptr::eq(io_error, &**returned[0]),
        "the same error value"
    );
    assert!(
        group
            .failure()
            .is_some_and(|f| f.error().ptr_eq(failure.error()))
    );

    let stopped = results
        .iter()
        .find_map(|joined| joined.as_ref().err())
        .expect("the sibling was stopped");
    assert_eq!(stopped.cancel_reason(), Some(CancelReason::Failed));
    assert!(stopped.cause().unwrap().is::<io::Error>());
}

#[test]
fn a_panic_is_a_failure_whose_source_is_its_message() {
    let mut group: JobGroup<(), io::Error> = JobGroup::new();
    group
        .spawn(JobOptions::new(), |token| {
            token.wait();
            Ok(())
        })
        .unwrap();
    group
        .spawn(
            JobOptions::new().name("parse"),
            |_| -> Result<(), io::Error> { panic!("bad header") },
        )
        .unwrap();
    let results = join_all(&mut group);
    assert!(
        results
            .iter()
            .any(|joined| matches!(joined, Err(NativeError::Panicked(_))))
    );
    let failure = group.failure().expect("the panic failed the group");
    assert_eq!(failure.name(), Some("parse"));
    assert_eq!(failure.error().to_string(), "panicked: bad header");
    assert_eq!(
        failure.source().map(ToString::to_string).as_deref(),
        Some("panicked: bad header")
    );
}

#[test]
fn a_cancel_from_outside_is_not_a_failure() {
    let mut group: JobGroup<(), io::Error> = JobGroup::new();
    group
        .spawn(JobOptions::new(), |token| {
            token.wait();
            Ok(())
        })
        .unwrap();
    group.cancel_all(CancelReason::Requested);
    let results = join_all(&mut group);
    assert_eq!(results.len(), 1);
    assert!(group.failure().is_none());
}

/// An error whose source chain loops (its `source` is itself) must not hang a search.
#[test]
fn a_source_chain_that_loops_ends_the_search() {
    #[derive(Debug)]
    struct Loop;
    impl std::fmt::Display for Loop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("loop")
        }
    }
    impl std::error::Error for Loop {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(self)
        }
    }
    let cause = Cause::new(Loop);
    assert!(cause.downcast_ref::<io::Error>().is_none());
    assert!(cause.is::<Loop>());
    let chain = tethered::__private::error_chain(cause.as_error());
    assert!(chain.starts_with("loop: loop"), "{chain}");
}

#[test]
fn a_job_that_fails_after_a_sibling_failed_is_returned_as_is() {
    let mut group: JobGroup<u32, io::Error> = JobGroup::new();
    group
        .spawn(JobOptions::new(), |_| Err(io::Error::other("first")))
        .unwrap();
    let first = join_all(&mut group);
    assert!(matches!(&first[0], Ok(Err(e)) if e.to_string() == "first"));
    // Added after the failure: it starts cancelled, and its closure never runs.
    group
        .spawn(JobOptions::new(), |_| -> Result<u32, io::Error> {
            unreachable!("a job added after the failure never runs")
        })
        .unwrap();
    let late = join_all(&mut group);
    let stop = late[0].as_ref().unwrap_err();
    assert_eq!(stop.cancel_reason(), Some(CancelReason::Failed));
    assert!(stop.returned().is_none());
    let failure = stop
        .cause()
        .and_then(|cause| cause.downcast_ref::<GroupFailure>().cloned())
        .unwrap();
    assert_eq!(failure.error().to_string(), "first");
}
