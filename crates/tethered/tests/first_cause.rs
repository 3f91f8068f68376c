//! The first cause wins, deterministically, and `cancel`'s return value agrees with the reason
//! the token reads.

use std::sync::{Arc, Barrier};
use std::time::Duration;

use tethered::{CancelReason, CancelSource, Cause, JobOptions, NativeScope, Tethered};

/// In a storm of threads cancelling a parent and its child, a child's `cancel` returns `true`
/// exactly when the child reads the reason that call gave.
#[test]
fn cancel_returns_true_exactly_when_its_reason_is_the_one_read() {
    for round in 0..200 {
        let parent = CancelSource::new();
        let child = parent.child();
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (parent, child, barrier) = (parent.clone(), child.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    if i % 2 == 0 {
                        (None, parent.cancel(CancelReason::Shutdown))
                    } else {
                        let reason = if i % 4 == 1 {
                            CancelReason::Requested
                        } else {
                            CancelReason::Dropped
                        };
                        (Some(reason), child.cancel(reason))
                    }
                })
            })
            .collect();
        let outcomes: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        let read = child.token().reason().unwrap();
        let child_wins: Vec<_> = outcomes
            .iter()
            .filter(|(reason, won)| reason.is_some() && *won)
            .collect();
        assert!(child_wins.len() <= 1, "round {round}: {outcomes:?}");
        match child_wins.first() {
            Some((Some(reason), _)) => assert_eq!(read, *reason, "round {round}"),
            _ => assert_eq!(read, CancelReason::Shutdown, "round {round}: {outcomes:?}"),
        }
        assert_eq!(
            outcomes
                .iter()
                .filter(|(reason, won)| reason.is_none() && *won)
                .count(),
            1,
            "the parent's cancel is decided once"
        );
    }
}

/// A job of a scope that is also a child of a request's token (the server recipe) reads the
/// request's `Timeout` when its handle is dropped because of that deadline, every time.
#[test]
fn a_scoped_jobs_dropped_handle_reads_the_requests_deadline() {
    let scope = NativeScope::new();
    for _ in 0..300 {
        let request = CancelSource::new();
        let job = tethered::spawn(
            JobOptions::new()
                .in_scope(&scope)
                .child_of(&request.token()),
            |token| token.wait(),
        )
        .unwrap();
        let token = job.token().clone();
        // The request's own waiter (the response future) hears the deadline first and drops
        // the job's handle, before the request's cancel has walked to the job.
        let waiter = request.token();
        let dropper = std::thread::spawn(move || {
            waiter.wait();
            drop(job);
        });
        request.cancel_with_cause(CancelReason::Timeout, Cause::msg("request deadline"));
        dropper.join().unwrap();
        assert_eq!(token.wait(), CancelReason::Timeout);
        assert_eq!(token.cause().unwrap().to_string(), "request deadline");
    }
    tethered::testing::assert_scope_returned(&scope, Duration::from_secs(10));
}

/// The rule behind it: a token cancelled while an ancestor's cancel walks down takes the
/// ancestor's reason, and its own cancel reports that it did not decide it.
#[test]
fn a_cancel_below_a_cancelled_ancestor_takes_its_reason_and_returns_false() {
    let server = CancelSource::new();
    let request = server.child();
    let other = CancelSource::new();
    let step = CancelSource::any_of([&other.token(), &request.token()]);
    let (callback_ran, seen) = std::sync::mpsc::channel();
    let step_source = step.clone();
    // A callback of the server's runs before its cancel walks down to the children: a cancel
    // of the step from there finds the server cancelled.
    let _guard = server.token().on_cancel(move |_| {
        let won = step_source.cancel(CancelReason::Dropped);
        callback_ran
            .send((won, step_source.token().reason()))
            .unwrap();
    });
    assert!(server.cancel(CancelReason::Shutdown));
    assert_eq!(seen.recv().unwrap(), (false, Some(CancelReason::Shutdown)));
    assert_eq!(request.token().reason(), Some(CancelReason::Shutdown));
}

/// A token with two parents, reached first by the walk of a cancel that began second: it
/// still reads the cause of the cancel that began first. Here the server's cancel runs a
/// callback (registered before the job's link) that cancels the request, whose walk reaches
/// the job before the server's does; the job reads `Shutdown`, every time.
#[test]
fn a_token_reached_first_by_a_later_cancel_reads_the_earlier_one() {
    for _ in 0..100 {
        let server = CancelSource::new();
        let request = CancelSource::new();
        // Registered on the server before the job exists: it runs before the job's link.
        let relay = {
            let request = request.clone();
            server.token().on_cancel(move |_| {
                request.cancel_with_cause(CancelReason::Dropped, Cause::msg("client went away"));
            })
        };
        let job_token = CancelSource::any_of([&request.token(), &server.token()]).token();
        server.cancel(CancelReason::Shutdown);
        assert_eq!(job_token.reason(), Some(CancelReason::Shutdown));
        assert!(
            job_token.cause().is_none(),
            "the job took the later cancel's cause"
        );
        drop(relay);
    }
}

/// The same with a tree of them: everything below the token takes the earlier cause too.
#[test]
fn the_earlier_cause_reaches_everything_below_the_token() {
    let server = CancelSource::new();
    let request = CancelSource::new();
    let _relay = {
        let request = request.clone();
        server.token().on_cancel(move |_| {
            request.cancel(CancelReason::Dropped);
        })
    };
    let job = CancelSource::any_of([&request.token(), &server.token()]);
    let grandchild = job.child().child();
    server.cancel(CancelReason::Shutdown);
    assert_eq!(grandchild.token().reason(), Some(CancelReason::Shutdown));
    assert_eq!(request.token().reason(), Some(CancelReason::Dropped));
}

/// A server's shutdown reads `Shutdown` on every job of its scope, even when the same shutdown
/// makes something else cancel the job's request first: here an SDK that cancels its requests
/// as soon as it hears the server's token (a callback registered before the scope's, so it runs
/// first). The scope's jobs have the server's token as an ancestor, and its cancel came first.
#[test]
fn a_shutdown_reads_shutdown_though_it_made_an_sdk_cancel_the_request_first() {
    for round in 0..50 {
        let server = CancelSource::new();
        let request = CancelSource::new();
        let sdk = {
            let request = request.clone();
            server.token().on_cancel(move |_| {
                request.cancel(CancelReason::Dropped);
            })
        };
        let scope = NativeScope::new().child_of(&server.token());
        let options = JobOptions::new()
            .in_scope(&scope)
            .child_of(&request.token());
        let job = tethered::spawn(options, |token| token.wait()).unwrap();
        let token = job.token().clone();
        assert!(server.cancel(CancelReason::Shutdown));
        assert_eq!(request.token().reason(), Some(CancelReason::Dropped));
        assert_eq!(
            token.reason(),
            Some(CancelReason::Shutdown),
            "round {round}: the job read its request's Dropped, which the shutdown caused"
        );
        let stopped = job.join_blocking().unwrap_err();
        assert_eq!(stopped.cancel_reason(), Some(CancelReason::Shutdown));
        drop(sdk);
    }
}

/// The same, when the SDK hears the shutdown on another thread (a waker: rmcp's, tokio-util's)
/// and cancels the request while the server's cancel is still on its way down.
#[test]
fn a_shutdown_reads_shutdown_though_another_thread_cancels_the_request_at_once() {
    for round in 0..200 {
        let server = CancelSource::new();
        let request = CancelSource::new();
        let scope = NativeScope::new().child_of(&server.token());
        let job = tethered::spawn(
            JobOptions::new()
                .in_scope(&scope)
                .child_of(&request.token()),
            |token| token.wait(),
        )
        .unwrap();
        let sdk = {
            let (server, request) = (server.token(), request.clone());
            std::thread::spawn(move || {
                server.wait();
                request.cancel(CancelReason::Dropped);
            })
        };
        std::thread::sleep(Duration::from_micros(50));
        server.cancel(CancelReason::Shutdown);
        sdk.join().unwrap();
        let stopped = job.join_blocking().unwrap_err();
        assert_eq!(
            stopped.cancel_reason(),
            Some(CancelReason::Shutdown),
            "round {round}"
        );
    }
}
