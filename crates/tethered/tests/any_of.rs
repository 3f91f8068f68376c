//! `CancelSource::any_of` and jobs with several parents: the first parent to be cancelled stops
//! the child with its reason and cause, the earliest deadline is kept, and the links are
//! released when the child is cancelled, sealed or freed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tethered::{CancelReason, CancelSource, Cause, JobOptions};

#[test]
fn the_first_parent_to_be_cancelled_stops_the_child_with_its_reason_and_cause() {
    for first in 0..3 {
        let parents: Vec<CancelSource> = (0..3).map(|_| CancelSource::new()).collect();
        let tokens: Vec<_> = parents.iter().map(CancelSource::token).collect();
        let child = CancelSource::any_of(&tokens);
        let grandchild = child.child();
        parents[first].cancel_with_cause(CancelReason::Shutdown, Cause::msg(format!("p{first}")));
        for (i, parent) in parents.iter().enumerate() {
            if i != first {
                parent.cancel(CancelReason::Timeout);
            }
        }
        assert_eq!(child.token().reason(), Some(CancelReason::Shutdown));
        assert_eq!(
            child.token().cause().unwrap().to_string(),
            format!("p{first}")
        );
        assert_eq!(grandchild.token().reason(), Some(CancelReason::Shutdown));
        assert_eq!(
            grandchild.token().cause().unwrap().to_string(),
            format!("p{first}")
        );
    }
}

#[test]
fn cancelling_the_child_touches_no_parent_and_releases_every_link() {
    let (a, b, c) = (
        CancelSource::new(),
        CancelSource::new(),
        CancelSource::new(),
    );
    let child = CancelSource::any_of([&a.token(), &b.token(), &c.token()]);
    for parent in [&a, &b, &c] {
        assert_eq!(parent.token().registrations(), 1, "one link each");
    }
    assert!(child.cancel(CancelReason::Requested));
    for parent in [&a, &b, &c] {
        assert!(!parent.is_cancelled());
        assert_eq!(parent.token().registrations(), 0, "released on the cancel");
    }
}

#[test]
fn a_child_that_goes_releases_its_links_and_a_million_children_leave_nothing() {
    let (a, b) = (CancelSource::new(), CancelSource::new());
    for _ in 0..1_000_000 {
        let child = CancelSource::any_of([&a.token(), &b.token()]);
        drop(child);
    }
    assert_eq!(a.token().registrations(), 0);
    assert_eq!(b.token().registrations(), 0);
}

#[test]
fn a_finished_jobs_links_are_released_at_once() {
    let (request, server) = (CancelSource::new(), CancelSource::new());
    let options = JobOptions::new()
        .child_of(&request.token())
        .child_of(&server.token());
    let job = tethered::spawn(options, |_| 7).unwrap();
    assert_eq!(job.join_blocking().unwrap(), 7);
    assert_eq!(request.token().registrations(), 0);
    assert_eq!(server.token().registrations(), 0);
}

#[test]
fn a_cancelled_parent_makes_the_child_start_cancelled() {
    let (a, b) = (CancelSource::new(), CancelSource::new());
    b.cancel_with_cause(CancelReason::Dropped, Cause::msg("gone"));
    let child = CancelSource::any_of([&a.token(), &b.token()]);
    assert_eq!(child.token().reason(), Some(CancelReason::Dropped));
    assert_eq!(
        a.token().registrations(),
        0,
        "a cancelled child keeps no link"
    );
    let never = CancelSource::any_of([&a.token(), &tethered::CancelToken::never()]);
    assert!(!never.is_cancelled());
    assert_eq!(a.token().registrations(), 1);
}

#[test]
fn the_earliest_deadline_of_every_parent_is_kept_also_one_set_later() {
    let (a, b) = (CancelSource::new(), CancelSource::new());
    let child = CancelSource::any_of([&a.token(), &b.token()]);
    assert_eq!(child.token().deadline(), None);
    let later = Instant::now() + Duration::from_secs(60);
    let sooner = Instant::now() + Duration::from_secs(30);
    a.cancel_at(later).unwrap();
    assert_eq!(child.token().deadline(), Some(later));
    b.cancel_at(sooner).unwrap();
    assert_eq!(
        child.token().deadline(),
        Some(sooner),
        "the linked parent's is earlier"
    );
    assert_eq!(
        child.child().token().deadline(),
        Some(sooner),
        "and flows down"
    );
}

#[test]
fn a_linked_parents_deadline_fires_into_the_child_even_when_its_own_handles_went() {
    let a = CancelSource::new();
    let child = {
        let b = CancelSource::new();
        b.cancel_after(Duration::from_millis(10)).unwrap();
        CancelSource::any_of([&a.token(), &b.token()])
        // `b`'s handles all go here; the child keeps it, and its timer fires.
    };
    assert_eq!(
        child.token().wait_timeout(Duration::from_secs(10)),
        Some(CancelReason::Timeout)
    );
}

#[test]
fn a_chain_of_a_hundred_thousand_linked_tokens_cancels_and_drops_on_a_small_stack() {
    let run = || {
        let root = CancelSource::new();
        let other = CancelSource::new();
        let mut last = CancelSource::any_of([&other.token(), &root.token()]);
        let leaf_probe = last.token();
        for _ in 0..100_000 {
            // Linked (not a tree child) to the previous one: only the link reaches it.
            last = CancelSource::any_of([&other.token(), &last.token()]);
        }
        let leaf = last.token();
        drop(last);
        root.cancel(CancelReason::Shutdown);
        assert_eq!(leaf_probe.reason(), Some(CancelReason::Shutdown));
        assert_eq!(leaf.reason(), Some(CancelReason::Shutdown));
        drop(leaf);
        assert_eq!(other.token().registrations(), 0);
    };
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(run)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn a_chain_of_linked_tokens_nobody_cancels_drops_on_a_small_stack() {
    let run = || {
        let other = CancelSource::new();
        let mut last = CancelSource::new();
        for _ in 0..100_000 {
            last = CancelSource::any_of([&other.token(), &last.token()]);
        }
        drop(last);
        assert_eq!(other.token().registrations(), 0);
    };
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(run)
        .unwrap()
        .join()
        .unwrap();
}

#[test]
fn a_link_callback_and_a_seal_racing_leave_nothing_behind() {
    for _ in 0..2_000 {
        let (a, b) = (CancelSource::new(), CancelSource::new());
        let go = Arc::new(AtomicBool::new(false));
        let job = tethered::spawn(
            JobOptions::new().child_of(&a.token()).child_of(&b.token()),
            {
                let go = go.clone();
                move |_| go.store(true, Ordering::SeqCst)
            },
        )
        .unwrap();
        while !go.load(Ordering::SeqCst) {
            std::hint::spin_loop();
        }
        b.cancel(CancelReason::Shutdown);
        let _ = job.join_blocking();
        assert_eq!(a.token().registrations(), 0);
        assert_eq!(b.token().registrations(), 0);
    }
}
