//! Tethered sources and `CancellationToken`s cancel each other.

mod common;

use std::thread;
use std::time::Duration;

use common::{RELEASE, RUNTIME, runtime, wait_until_async};
use tethered::{CancelReason, CancelSource, JobOptions, Tethered};
use tethered_test_support::{Probe, RETURN_BOUND, report, spin_until};
use tethered_tokio::TokioSpawner;
use tethered_tokio_util::{cancel_source_from, link};
use tokio_util::sync::CancellationToken;

/// Runs a test body on its own thread and fails if it has not finished within [`RELEASE`].
///
/// A cancel crossing a link re-enters the other side's `cancel` on the same thread (the
/// tethered callback cancels the `CancellationToken` that is waking it). That is safe only
/// because tokio's `Notify` wakes waiters after releasing its locks; should that change, these
/// tests fail with a deadlock message instead of hanging.
fn bounded(body: impl FnOnce() + Send + 'static) {
    tethered_test_support::bounded(
        "a link test (deadlock between crossing cancels?)",
        RELEASE,
        body,
    );
}

#[test]
fn cancelling_the_tethered_source_cancels_the_linked_token_before_cancel_returns() {
    bounded(|| {
        let source = CancelSource::new();
        let token = CancellationToken::new();
        let child = token.child_token();
        let link = link(&source, &token);
        source.cancel(CancelReason::Timeout);
        assert!(token.is_cancelled());
        assert!(child.is_cancelled());
        assert!(!link.is_linked());
    });
}

#[test]
fn cancelling_the_token_cancels_the_linked_source_before_cancel_returns() {
    bounded(|| {
        let source = CancelSource::new();
        let token = CancellationToken::new();
        let _link = link(&source, &token);
        token.cancel();
        assert_eq!(source.token().reason(), Some(CancelReason::Dropped));
    });
}

#[test]
fn cancelling_a_parent_token_from_another_thread_reaches_the_source() {
    bounded(|| {
        let source = CancelSource::new();
        let parent = CancellationToken::new();
        let _link = link(&source, &parent.child_token());
        let canceller = thread::spawn(move || parent.cancel());
        assert_eq!(
            source.token().wait_timeout(RETURN_BOUND),
            Some(CancelReason::Dropped)
        );
        canceller.join().unwrap();
    });
}

#[test]
fn linking_an_already_cancelled_side_cancels_the_other_at_once() {
    bounded(|| {
        let source = CancelSource::new();
        source.cancel(CancelReason::Shutdown);
        let token = CancellationToken::new();
        let link_a = link(&source, &token);
        assert!(token.is_cancelled());
        assert!(!link_a.is_linked());

        let token = CancellationToken::new();
        token.cancel();
        let source = CancelSource::new();
        let link_b = link(&source, &token);
        assert_eq!(source.token().reason(), Some(CancelReason::Dropped));
        assert!(!link_b.is_linked());
    });
}

#[test]
fn dropping_the_link_stops_both_directions_and_unregisters() {
    bounded(|| {
        let source = CancelSource::new();
        let token = CancellationToken::new();
        drop(link(&source, &token));
        assert_eq!(source.token().registrations(), 0);
        token.cancel();
        assert!(!source.is_cancelled());

        let source = CancelSource::new();
        let token = CancellationToken::new();
        drop(link(&source, &token));
        source.cancel(CancelReason::Requested);
        assert!(!token.is_cancelled());
    });
}

#[test]
fn a_source_from_a_token_cancels_both_ways() {
    bounded(|| {
        let token = CancellationToken::new();
        let source = cancel_source_from(&token);
        token.cancel();
        assert_eq!(source.token().reason(), Some(CancelReason::Dropped));

        let token = CancellationToken::new();
        let source = cancel_source_from(&token);
        source.cancel(CancelReason::Timeout);
        assert!(token.is_cancelled());
    });
}

#[test]
fn a_source_from_a_child_token_leaves_the_parent_alone() {
    bounded(|| {
        let shutdown = CancellationToken::new();
        let source = cancel_source_from(&shutdown.child_token());
        source.cancel(CancelReason::Dropped);
        assert!(!shutdown.is_cancelled());
    });
}

#[test]
fn a_cancellation_token_stops_a_native_job_on_tokio() {
    bounded(|| {
        let runtime = runtime();
        let probe = Probe::new();
        let shutdown = CancellationToken::new();
        let result = runtime.block_on({
            let probe = probe.clone();
            let shutdown = shutdown.clone();
            async move {
                let job = tethered::spawn(
                    JobOptions::new()
                        .child_of(&cancel_source_from(&shutdown.child_token()).token())
                        .on(TokioSpawner::current()),
                    {
                        let probe = probe.clone();
                        move |token| {
                            probe.run_tethered(&token, || spin_until(|| token.is_cancelled()));
                            token.reason()
                        }
                    },
                )
                .expect("spawn on a running runtime");
                assert!(wait_until_async(RETURN_BOUND, || probe.started()).await);
                probe.mark_cancel(std::time::Instant::now());
                shutdown.cancel();
                job.await
            }
        });
        // Cancelled while it ran: the stop, with what the closure returned after it.
        let err = result.expect_err("the job was cancelled while its closure ran");
        assert_eq!(err.cancel_reason(), Some(CancelReason::Dropped));
        assert_eq!(err.into_returned(), Some(Some(CancelReason::Dropped)));
        report(
            RUNTIME,
            "CancellationToken -> native job",
            [probe.cancel_to_return()],
        );
    });
}

/// A job runs on its own child token of the source it is tied to: dropping it cancels the
/// job, and neither the source nor the tokio-util token linked to that source.
#[test]
fn dropping_a_job_tied_to_a_linked_source_leaves_the_source_and_its_token_alone() {
    bounded(|| {
        let runtime = runtime();
        let token = CancellationToken::new();
        let source = CancelSource::new();
        let _link = link(&source, &token);
        let job_token = runtime.block_on(async {
            let job = tethered::spawn(
                JobOptions::new()
                    .child_of(&source.token())
                    .on(TokioSpawner::current()),
                |t| t.wait_timeout(Duration::from_secs(10)),
            )
            .expect("spawn on a running runtime");
            let job_token = job.token().clone();
            drop(job); // the awaiting side gives up
            job_token
        });
        assert!(job_token.is_cancelled(), "the job heard its drop");
        assert!(
            !source.is_cancelled(),
            "the caller's source is the caller's"
        );
        assert!(!token.is_cancelled(), "and so is the token linked to it");
    });
}

/// A tethered callback that uses (or merely drops) a token of the same tokio-util tree, run
/// by a cancel of the tree's root from another thread: with tokio-util before 0.7.20 this
/// deadlocked, because the link's waker ran under the parent token's lock.
#[test]
fn a_callback_touching_the_same_token_tree_does_not_deadlock() {
    bounded(|| {
        let shutdown = CancellationToken::new();
        let source = cancel_source_from(&shutdown.child_token());
        let app = shutdown.clone();
        let (seen_tx, seen) = std::sync::mpsc::channel();
        source
            .token()
            .on_cancel(move |_| {
                seen_tx.send(app.is_cancelled()).unwrap();
                drop(app);
            })
            .detach();
        let canceller = {
            let shutdown = shutdown.clone();
            thread::spawn(move || shutdown.cancel())
        };
        canceller.join().unwrap();
        assert!(seen.recv().unwrap(), "the callback saw the tree cancelled");
        assert!(source.is_cancelled());
    });
}
