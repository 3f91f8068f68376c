//! Comparison 4, paired: a cancel's walk of a tree against tokio-util's, per child of a
//! 1,000-child fan-out, per child of the same fan-out with a future waiting on every child, and
//! per level of a 1,000-level chain, in alternating rounds.
//!
//! A cancel of 1,000 tokens takes tens of microseconds, and on a shared machine what that
//! costs drifts by more than the difference being measured; the criterion suite
//! (`cancel_on_drop`) measures one variant fully, then the other, so that drift lands in its
//! ratio. Here each round builds both trees (which one is built first alternates, so neither
//! is always the warmer in the cache), times the cancel of each root (which one goes first
//! alternates too), and takes the ratio; the result is the median over rounds, with its
//! quartiles. Building and dropping the trees is outside the timing, as in the criterion suite:
//! every token holds its handle while the root is cancelled.
//!
//! In the fan-out with waiters, every child has one pending `cancelled()` future (tethered:
//! `child.token().cancelled()`; tokio-util: `child.cancelled_owned()`), polled once before the
//! timed cancel so that its waker is registered: the cancel then also wakes 1,000 wakers, as it
//! does for 1,000 tasks each waiting on a request's token. The measured rounds register a no-op
//! waker (`Waker::noop()`), so the time is the libraries' own; the warm-up rounds register a
//! counting one and check that the cancel woke every waiter once, and every round polls every
//! future again after the cancel (untimed) and checks that it is ready.
//!
//! Results go to `target/tethered-bench/tree.json` (see `report.py`).
//!
//! Run with: cargo bench -p benchmarks --bench tree_paired

use std::hint::black_box;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Wake, Waker};
use std::time::{Duration, Instant};

use benchmarks::{Invocation, Paired, write_results};
use tethered::{CancelReason, CancelSource, WaitCancelled};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// Tokens below the root in each tree.
const SIZE: usize = 1_000;

/// The three shapes measured.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// `SIZE` children of the root.
    FanOut,
    /// `SIZE` children of the root, each with one pending `cancelled()` future.
    FanOutWaiters,
    /// A chain of `SIZE` levels below the root, each the child of the one above.
    Chain,
}

/// tethered's tree: the root and every token below it, as the criterion suite holds them, and
/// the futures waiting on the children (none but for [`Shape::FanOutWaiters`]).
struct Ours {
    tokens: Vec<CancelSource>,
    waiters: Vec<WaitCancelled>,
}

/// tokio-util's tree, as [`Ours`]. Its futures are not `Unpin`: each is pinned in a box.
struct Theirs {
    tokens: Vec<CancellationToken>,
    waiters: Vec<Pin<Box<WaitForCancellationFutureOwned>>>,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::FanOut => "fan_out",
            Shape::FanOutWaiters => "fan_out_waiters",
            Shape::Chain => "chain",
        }
    }

    /// The wake-ups a cancel of the root makes: one per waiting future.
    fn wake_ups(self) -> usize {
        match self {
            Shape::FanOutWaiters => SIZE,
            Shape::FanOut | Shape::Chain => 0,
        }
    }

    /// tethered's tree, with `waker` registered in every child's future.
    fn tethered(self, waker: &Waker) -> Ours {
        let mut tokens = vec![CancelSource::new()];
        for _ in 0..SIZE {
            let parent = match self {
                Shape::Chain => tokens.last().expect("the root is there"),
                Shape::FanOut | Shape::FanOutWaiters => &tokens[0],
            };
            let child = parent.child();
            tokens.push(child);
        }
        let mut waiters = Vec::new();
        if let Shape::FanOutWaiters = self {
            let mut cx = Context::from_waker(waker);
            for child in &tokens[1..] {
                let mut waiter = child.token().cancelled();
                assert!(Pin::new(&mut waiter).poll(&mut cx).is_pending());
                waiters.push(waiter);
            }
        }
        Ours { tokens, waiters }
    }

    /// tokio-util's tree, likewise.
    fn tokio_util(self, waker: &Waker) -> Theirs {
        let mut tokens = vec![CancellationToken::new()];
        for _ in 0..SIZE {
            let parent = match self {
                Shape::Chain => tokens.last().expect("the root is there"),
                Shape::FanOut | Shape::FanOutWaiters => &tokens[0],
            };
            let child = parent.child_token();
            tokens.push(child);
        }
        let mut waiters = Vec::new();
        if let Shape::FanOutWaiters = self {
            let mut cx = Context::from_waker(waker);
            for child in &tokens[1..] {
                let mut waiter = Box::pin(child.clone().cancelled_owned());
                assert!(waiter.as_mut().poll(&mut cx).is_pending());
                waiters.push(waiter);
            }
        }
        Theirs { tokens, waiters }
    }
}

/// A waker that counts its wake-ups (the warm-up rounds' check that every waiter was woken).
#[derive(Default)]
struct WakeCount(AtomicUsize);

impl Wake for WakeCount {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

fn time(cancel: impl FnOnce()) -> Duration {
    let start = Instant::now();
    cancel();
    start.elapsed()
}

fn rounds(shape: Shape, warm_up: usize, rounds: usize) -> Paired {
    let mut paired = Paired::default();
    for round in 0..warm_up + rounds {
        // One counter per tree, in the warm-up rounds only.
        let counts = (round < warm_up).then(|| {
            let ours = Arc::new(WakeCount::default());
            (ours.clone(), Arc::new(WakeCount::default()))
        });
        let (ours_waker, theirs_waker) = match &counts {
            Some((ours, theirs)) => (Waker::from(ours.clone()), Waker::from(theirs.clone())),
            None => (Waker::noop().clone(), Waker::noop().clone()),
        };
        let (mut ours, mut theirs) = if round % 2 == 0 {
            let ours = shape.tethered(&ours_waker);
            (ours, shape.tokio_util(&theirs_waker))
        } else {
            let theirs = shape.tokio_util(&theirs_waker);
            (shape.tethered(&ours_waker), theirs)
        };
        let cancel_ours = || {
            black_box(ours.tokens[0].cancel(CancelReason::Requested));
        };
        let cancel_theirs = || theirs.tokens[0].cancel();
        let (ours_time, theirs_time) = if (round / 2) % 2 == 0 {
            let ours_time = time(cancel_ours);
            (ours_time, time(cancel_theirs))
        } else {
            let theirs_time = time(cancel_theirs);
            (time(cancel_ours), theirs_time)
        };
        assert!(ours.tokens.iter().all(CancelSource::is_cancelled));
        assert!(theirs.tokens.iter().all(CancellationToken::is_cancelled));
        if let Some((ours, theirs)) = &counts {
            let expected = shape.wake_ups();
            assert_eq!(
                ours.0.load(Ordering::Relaxed),
                expected,
                "tethered's wake-ups"
            );
            assert_eq!(
                theirs.0.load(Ordering::Relaxed),
                expected,
                "tokio-util's wake-ups"
            );
        }
        let mut cx = Context::from_waker(Waker::noop());
        assert!(
            ours.waiters
                .iter_mut()
                .all(|waiter| Pin::new(waiter).poll(&mut cx).is_ready())
        );
        assert!(
            theirs
                .waiters
                .iter_mut()
                .all(|waiter| waiter.as_mut().poll(&mut cx).is_ready())
        );
        if round >= warm_up {
            paired.push(theirs_time, ours_time, SIZE as u32);
        }
        drop((ours, theirs));
    }
    paired
}

fn main() {
    let invocation = Invocation::from_args();
    let (warm_up, count) = if invocation.measure {
        (50, 2_000)
    } else {
        (1, 4)
    };
    let mut fields = Vec::new();
    for shape in [Shape::FanOut, Shape::FanOutWaiters, Shape::Chain] {
        let name = shape.name();
        if !invocation.selects(name) {
            continue;
        }
        let paired = rounds(shape, warm_up, count);
        fields.push(paired.report(name, "tokio_util"));
    }
    if invocation.measure && invocation.filter.is_none() {
        write_results(
            "tree",
            &format!(
                "{{\"size\": {SIZE}, \"rounds\": {count}, {}}}\n",
                fields.join(", ")
            ),
        );
    }
}
