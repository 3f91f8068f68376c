//! `tethered-process`'s pool: its queue of requests waiting for a worker, its idle seats, and
//! a request a seat hands back when it finds its worker gone. Only under `--cfg tethered_loom`,
//! through the crate's loom-only module; the models drive the pool's own code.
//!
//! Negative controls (each runs its model again with the old code put back, and expects it to
//! fail):
//! - a handed-back request queued without a cancel link (`pool_requeue_without_link`): its
//!   cancel never reaches it, and it waits forever;
//! - a handed-back request queued at the back (`pool_requeue_at_back`): a newer request takes
//!   the next worker first.

#![cfg(all(tethered_loom, unix))]

use loom_tests::sync::{Arc, AtomicBool, Ordering};
use loom_tests::{fails_with_fault, model, thread};
use tethered::{CancelReason, CancelSource};
use tethered_process::loom::{ModelNext, ModelQueue, ModelSeat};

/// A request as the queue holds it: its drop is how a cancelled waiting request finishes.
#[derive(Debug)]
struct Request {
    id: u32,
    dropped: Arc<AtomicBool>,
}

impl Request {
    fn new(id: u32) -> (Request, Arc<AtomicBool>) {
        let dropped = Arc::new(AtomicBool::new(false));
        (
            Request {
                id,
                dropped: dropped.clone(),
            },
            dropped,
        )
    }
}

impl PartialEq for Request {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for Request {}

impl Drop for Request {
    fn drop(&mut self) {
        self.dropped.store(true, Ordering::SeqCst);
    }
}

/// A request a seat handed back (its worker had gone) is queued again while its request is
/// cancelled: in every order, the cancel takes it out of the queue and finishes it.
#[test]
fn a_handed_back_request_keeps_its_cancel() {
    model("pool_requeue_vs_cancel", || {
        let queue = ModelQueue::new();
        let source = CancelSource::new();
        let (request, dropped) = Request::new(1);
        let canceller = {
            let source = source.clone();
            thread::spawn(move || {
                source.cancel(CancelReason::Dropped);
            })
        };
        // No seat is idle: it waits, at the front, with a link of its own.
        queue.dispatch(request, &source.token(), true).unwrap();
        canceller.join().unwrap();
        assert_eq!(
            queue.waiting(),
            0,
            "a cancelled request that a seat handed back is still waiting for a worker"
        );
        assert!(
            dropped.load(Ordering::SeqCst),
            "the request was not finished"
        );
    });
}

#[test]
fn negative_control_requeue_without_link() {
    fails_with_fault(
        "a_handed_back_request_keeps_its_cancel",
        "pool_requeue_without_link",
        "a cancelled request that a seat handed back is still waiting for a worker",
    );
}

/// A request a seat handed back goes before one that arrives meanwhile: it waited longest.
#[test]
fn a_handed_back_request_goes_first() {
    model("pool_requeue_order", || {
        let queue = ModelQueue::new();
        let token = CancelSource::new().token();
        let newcomer = {
            let queue = queue.clone();
            let token = token.clone();
            thread::spawn(move || {
                let (request, _) = Request::new(2);
                queue.dispatch(request, &token, false).unwrap();
            })
        };
        let (handed_back, _) = Request::new(1);
        queue.dispatch(handed_back, &token, true).unwrap();
        newcomer.join().unwrap();
        let seat = ModelSeat::new();
        match queue.next(&seat) {
            ModelNext::Task(request) => assert_eq!(
                request.id, 1,
                "a newer request went before the one a seat handed back"
            ),
            other => panic!("two requests wait, and the seat got {other:?}"),
        }
    });
}

#[test]
fn negative_control_requeue_at_back() {
    fails_with_fault(
        "a_handed_back_request_goes_first",
        "pool_requeue_at_back",
        "a newer request went before the one a seat handed back",
    );
}

/// A request and a seat that asks for work meet exactly once, whichever comes first: the seat
/// takes it from the queue, or goes idle and is handed it (and woken: a lost wake-up is a
/// deadlock loom reports).
#[test]
fn a_request_and_an_idle_seat_meet_once() {
    model("pool_dispatch_vs_idle_seat", || {
        let queue = ModelQueue::new();
        let token = CancelSource::new().token();
        let seat = ModelSeat::new();
        let dispatcher = {
            let queue = queue.clone();
            thread::spawn(move || {
                let (request, _) = Request::new(1);
                queue.dispatch(request, &token, false).unwrap();
            })
        };
        let got = match queue.next(&seat) {
            ModelNext::Task(request) => request,
            ModelNext::Idle => seat.wait().expect("an idle seat is handed the request"),
            ModelNext::Closed => panic!("the pool is open"),
        };
        dispatcher.join().unwrap();
        assert_eq!(got.id, 1);
        assert_eq!(
            queue.waiting(),
            0,
            "the request was both handed out and queued"
        );
    });
}

/// A seat whose worker left while it was idle leaves the idle list while a request is handed
/// out: the request ends up in exactly one place (handed back for the queue, queued, or in the
/// seat's slot), never lost and never twice.
#[test]
fn a_seat_leaving_idle_never_loses_a_request() {
    model("pool_leave_idle_vs_dispatch", || {
        let queue = ModelQueue::new();
        let token = CancelSource::new().token();
        let seat = ModelSeat::new();
        assert_eq!(queue.next(&seat), ModelNext::Idle);
        let dispatcher = {
            let queue = queue.clone();
            thread::spawn(move || {
                let (request, _) = Request::new(1);
                queue.dispatch(request, &token, false).unwrap();
            })
        };
        let handed_back = queue.leave_idle(&seat);
        dispatcher.join().unwrap();
        let places = usize::from(handed_back.is_some())
            + queue.waiting()
            + usize::from(seat.take().is_some());
        assert_eq!(places, 1, "the request is in {places} places");
    });
}
