//! Comparison 4, paired: a cancel's walk of a tree against tokio-util's, per child of a
//! fan-out of 1, 1,000, 10,000 and 100,000 children, per child of the 1,000-child fan-out with a
//! future waiting on every child, per level of a 1,000-level chain, and a cancel storm (every
//! child of one parent cancelled by its own source and dropped, as requests that end cancelled
//! under a server's token) at 1, 1,000, 10,000 and 100,000 siblings, in alternating rounds.
//!
//! A round cancels at least 1,000 tokens: below that size it builds as many trees as make
//! 1,000 children and times them all (a single cancel of one child is too short for the
//! clock). Rounds of the larger trees are fewer (their build takes milliseconds).
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

/// Tokens below the root in the trees whose rows keep their first names (`fan_out`,
/// `fan_out_waiters`, `chain`).
const SIZE: usize = 1_000;

/// The fewest tokens below the roots that one round cancels.
const UNITS: usize = 1_000;

/// The shapes measured.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// Children of the root; the root's cancel is timed.
    FanOut,
    /// Children of the root, each with one pending `cancelled()` future.
    FanOutWaiters,
    /// A chain of levels below the root, each the child of the one above.
    Chain,
    /// Children of the root, each cancelled by its own source and then dropped, one after
    /// another (the root stays): what every request that ends cancelled costs its server.
    Storm,
}

/// One row: a shape at a size.
#[derive(Clone, Copy, Debug)]
struct Case {
    shape: Shape,
    /// Tokens below the root of each tree.
    size: usize,
}

impl Case {
    /// The row's name: the shape's (with the size, but for the rows first measured at
    /// [`SIZE`]).
    fn name(self) -> String {
        match (self.shape, self.size) {
            (Shape::FanOut | Shape::FanOutWaiters | Shape::Chain, SIZE) => {
                self.shape.name().to_owned()
            }
            (shape, size) => format!("{}_{size}", shape.name()),
        }
    }

    /// Trees per round: enough for [`UNITS`] tokens.
    fn trees(self) -> usize {
        UNITS.div_ceil(self.size)
    }

    /// Measured rounds: fewer for the trees that take milliseconds to build.
    fn rounds(self, measure: bool) -> (usize, usize) {
        match (measure, self.size) {
            (false, _) => (1, 4),
            (true, size) if size <= SIZE => (50, 2_000),
            (true, size) if size <= 10_000 => (10, 300),
            (true, _) => (3, 40),
        }
    }
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
            Shape::Storm => "storm",
        }
    }

    /// The wake-ups a cancel of the root makes: one per waiting future.
    fn wake_ups(self, size: usize) -> usize {
        match self {
            Shape::FanOutWaiters => size,
            Shape::FanOut | Shape::Chain | Shape::Storm => 0,
        }
    }

    /// tethered's tree of `size` tokens below its root, with `waker` registered in every
    /// child's future.
    fn tethered(self, size: usize, waker: &Waker) -> Ours {
        let mut tokens = vec![CancelSource::new()];
        for _ in 0..size {
            let parent = match self {
                Shape::Chain => tokens.last().expect("the root is there"),
                Shape::FanOut | Shape::FanOutWaiters | Shape::Storm => &tokens[0],
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
    fn tokio_util(self, size: usize, waker: &Waker) -> Theirs {
        let mut tokens = vec![CancellationToken::new()];
        for _ in 0..size {
            let parent = match self {
                Shape::Chain => tokens.last().expect("the root is there"),
                Shape::FanOut | Shape::FanOutWaiters | Shape::Storm => &tokens[0],
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

/// tethered's side of one round: cancels each tree's root, or (a storm) cancels and drops
/// each child.
fn end_ours(shape: Shape, trees: &mut [Ours]) {
    for tree in trees {
        match shape {
            Shape::Storm => {
                for child in tree.tokens.drain(1..) {
                    black_box(child.cancel(CancelReason::Requested));
                }
            }
            Shape::FanOut | Shape::FanOutWaiters | Shape::Chain => {
                black_box(tree.tokens[0].cancel(CancelReason::Requested));
            }
        }
    }
}

/// tokio-util's side, the same way.
fn end_theirs(shape: Shape, trees: &mut [Theirs]) {
    for tree in trees {
        match shape {
            Shape::Storm => {
                for child in tree.tokens.drain(1..) {
                    child.cancel();
                }
            }
            Shape::FanOut | Shape::FanOutWaiters | Shape::Chain => tree.tokens[0].cancel(),
        }
    }
}

/// What each side's round left: every token cancelled (a storm: every child gone, and the
/// root neither cancelled nor holding any child), every waiter ready.
fn check(shape: Shape, ours: &mut [Ours], theirs: &mut [Theirs]) {
    let mut cx = Context::from_waker(Waker::noop());
    for tree in ours {
        if let Shape::Storm = shape {
            assert_eq!(tree.tokens.len(), 1);
            assert!(!tree.tokens[0].is_cancelled());
            assert_eq!(tree.tokens[0].token().registrations(), 0);
        }
        assert!(tree.tokens.iter().all(|t| t.is_cancelled()) || shape_is_storm(shape));
        assert!(
            tree.waiters
                .iter_mut()
                .all(|waiter| Pin::new(waiter).poll(&mut cx).is_ready())
        );
    }
    for tree in theirs {
        if let Shape::Storm = shape {
            assert_eq!(tree.tokens.len(), 1);
            assert!(!tree.tokens[0].is_cancelled());
        }
        assert!(tree.tokens.iter().all(CancellationToken::is_cancelled) || shape_is_storm(shape));
        assert!(
            tree.waiters
                .iter_mut()
                .all(|waiter| waiter.as_mut().poll(&mut cx).is_ready())
        );
    }
}

fn shape_is_storm(shape: Shape) -> bool {
    matches!(shape, Shape::Storm)
}

fn rounds(case: Case, warm_up: usize, rounds: usize) -> Paired {
    let Case { shape, size } = case;
    let mut paired = Paired::default();
    for round in 0..warm_up + rounds {
        // One counter per side, in the warm-up rounds only.
        let counts = (round < warm_up).then(|| {
            let ours = Arc::new(WakeCount::default());
            (ours.clone(), Arc::new(WakeCount::default()))
        });
        let (ours_waker, theirs_waker) = match &counts {
            Some((ours, theirs)) => (Waker::from(ours.clone()), Waker::from(theirs.clone())),
            None => (Waker::noop().clone(), Waker::noop().clone()),
        };
        let build_ours = || -> Vec<Ours> {
            (0..case.trees())
                .map(|_| shape.tethered(size, &ours_waker))
                .collect()
        };
        let build_theirs = || -> Vec<Theirs> {
            (0..case.trees())
                .map(|_| shape.tokio_util(size, &theirs_waker))
                .collect()
        };
        let (mut ours, mut theirs) = if round % 2 == 0 {
            let ours = build_ours();
            (ours, build_theirs())
        } else {
            let theirs = build_theirs();
            (build_ours(), theirs)
        };
        let (ours_time, theirs_time) = if (round / 2) % 2 == 0 {
            let ours_time = time(|| end_ours(shape, &mut ours));
            (ours_time, time(|| end_theirs(shape, &mut theirs)))
        } else {
            let theirs_time = time(|| end_theirs(shape, &mut theirs));
            (time(|| end_ours(shape, &mut ours)), theirs_time)
        };
        check(shape, &mut ours, &mut theirs);
        if let Some((ours, theirs)) = &counts {
            let expected = shape.wake_ups(size) * case.trees();
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
        if round >= warm_up {
            let units = u32::try_from(size * case.trees()).expect("a round's tokens fit");
            paired.push(theirs_time, ours_time, units);
        }
        drop((ours, theirs));
    }
    paired
}

fn main() {
    let invocation = Invocation::from_args();
    let mut cases = vec![
        Case {
            shape: Shape::FanOut,
            size: SIZE,
        },
        Case {
            shape: Shape::FanOutWaiters,
            size: SIZE,
        },
        Case {
            shape: Shape::Chain,
            size: SIZE,
        },
    ];
    for size in [1, 10_000, 100_000] {
        cases.push(Case {
            shape: Shape::FanOut,
            size,
        });
    }
    for size in [1, SIZE, 10_000, 100_000] {
        cases.push(Case {
            shape: Shape::Storm,
            size,
        });
    }
    let mut fields = Vec::new();
    let mut counts = Vec::new();
    for case in cases {
        let name = case.name();
        if !invocation.selects(&name) {
            continue;
        }
        let (warm_up, count) = case.rounds(invocation.measure);
        let paired = rounds(case, warm_up, count);
        fields.push(paired.report(&name, "tokio_util"));
        counts.push(format!("\"{name}\": {count}"));
    }
    if invocation.measure && invocation.filter.is_none() {
        write_results(
            "tree",
            &format!(
                "{{\"size\": {SIZE}, \"rounds\": {}, \"rounds_by_case\": {{{}}}, {}}}\n",
                Case {
                    shape: Shape::FanOut,
                    size: SIZE
                }
                .rounds(true)
                .1,
                counts.join(", "),
                fields.join(", ")
            ),
        );
    }
}
