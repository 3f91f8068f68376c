//! Comparison 4, paired: a cancel's walk of a tree against tokio-util's, per child of a
//! 1,000-child fan-out and per level of a 1,000-level chain, in alternating rounds.
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
//! Results go to `target/tethered-bench/tree.json` (see `report.py`).
//!
//! Run with: cargo bench -p benchmarks --bench tree_paired

use std::hint::black_box;
use std::time::{Duration, Instant};

use benchmarks::{Invocation, Paired, write_results};
use tethered::{CancelReason, CancelSource};
use tokio_util::sync::CancellationToken;

/// Tokens below the root in each tree.
const SIZE: usize = 1_000;

/// The two shapes measured.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// `SIZE` children of the root.
    FanOut,
    /// A chain of `SIZE` levels below the root, each the child of the one above.
    Chain,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::FanOut => "fan_out",
            Shape::Chain => "chain",
        }
    }

    /// The root and every token below it, as the criterion suite holds them.
    fn tethered(self) -> Vec<CancelSource> {
        let mut tokens = vec![CancelSource::new()];
        for _ in 0..SIZE {
            let parent = match self {
                Shape::Chain => tokens.last().expect("the root is there"),
                Shape::FanOut => &tokens[0],
            };
            let child = parent.child();
            tokens.push(child);
        }
        tokens
    }

    fn tokio_util(self) -> Vec<CancellationToken> {
        let mut tokens = vec![CancellationToken::new()];
        for _ in 0..SIZE {
            let parent = match self {
                Shape::Chain => tokens.last().expect("the root is there"),
                Shape::FanOut => &tokens[0],
            };
            let child = parent.child_token();
            tokens.push(child);
        }
        tokens
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
        let (ours, theirs) = if round % 2 == 0 {
            let ours = shape.tethered();
            (ours, shape.tokio_util())
        } else {
            let theirs = shape.tokio_util();
            (shape.tethered(), theirs)
        };
        let cancel_ours = || {
            black_box(ours[0].cancel(CancelReason::Requested));
        };
        let cancel_theirs = || theirs[0].cancel();
        let (ours_time, theirs_time) = if (round / 2) % 2 == 0 {
            let ours_time = time(cancel_ours);
            (ours_time, time(cancel_theirs))
        } else {
            let theirs_time = time(cancel_theirs);
            (time(cancel_ours), theirs_time)
        };
        assert!(ours.iter().all(CancelSource::is_cancelled));
        assert!(theirs.iter().all(CancellationToken::is_cancelled));
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
    for shape in [Shape::FanOut, Shape::Chain] {
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
