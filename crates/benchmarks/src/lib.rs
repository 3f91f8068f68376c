//! Helpers shared by the benchmark targets in `benches/`.
//!
//! The criterion suites (`check`, `round_trip`, `cancel_on_drop`) write their results where
//! criterion always does, `target/criterion/`. The targets with a `main` of their own
//! (`latency`, which needs medians and percentiles that criterion does not report,
//! `round_trip_paired`, which alternates two variants batch by batch, `concurrent_paired`, which
//! does the same for batches of jobs spawned at once, `tree_paired`, which does it for a
//! cancel's walk of a tree, `busy_paired`, which does it for a busy closure's cancel-to-observe
//! latency, and `allocations`, which needs a counting global allocator) write JSON files to
//! [`results_dir`]. `report.py` beside this crate's manifest turns both into `BENCHMARKS.md`;
//! `against.py` beside it compares this tree's round trips with those of another git revision
//! of tethered.

use std::fmt::Write as _;
use std::hint::spin_loop;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::{Duration, Instant};

/// Where the targets with their own `main` write their JSON: `target/tethered-bench/`, next to
/// criterion's `target/criterion/` (honouring `CARGO_TARGET_DIR`, as criterion does).
pub fn results_dir() -> PathBuf {
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"),
    };
    target.join("tethered-bench")
}

/// Writes `json` to `<results_dir>/<name>.json` and says where on stdout.
///
/// # Panics
///
/// If the directory cannot be created or the file written: a benchmark run that cannot keep
/// its results has failed.
pub fn write_results(name: &str, json: &str) {
    let dir = results_dir();
    std::fs::create_dir_all(&dir)
        .unwrap_or_else(|err| panic!("cannot create {}: {err}", dir.display()));
    let path = dir.join(format!("{name}.json"));
    std::fs::write(&path, json)
        .unwrap_or_else(|err| panic!("cannot write {}: {err}", path.display()));
    println!("wrote {}", path.display());
}

/// How a benchmark binary with its own `main` was started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// `cargo bench` passes `--bench`; `cargo test --benches` does not. Without it the
    /// binary runs a short smoke pass and writes no results.
    pub measure: bool,
    /// The first free argument, as criterion takes it: run only cases whose name contains it.
    pub filter: Option<String>,
}

impl Invocation {
    /// Reads the process arguments.
    pub fn from_args() -> Self {
        let mut measure = false;
        let mut filter = None;
        for arg in std::env::args().skip(1) {
            if arg == "--bench" {
                measure = true;
            } else if !arg.starts_with('-') && filter.is_none() {
                filter = Some(arg);
            }
        }
        Invocation { measure, filter }
    }

    /// Whether the case called `name` is selected by the filter.
    pub fn selects(&self, name: &str) -> bool {
        self.filter.as_deref().is_none_or(|f| name.contains(f))
    }
}

/// The quartiles of `values` (nearest rank): the first, the median, the third.
///
/// # Panics
///
/// If `values` is empty.
pub fn quartiles(values: &[f64]) -> [f64; 3] {
    assert!(!values.is_empty(), "no values to take quartiles of");
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = |p: f64| {
        let index = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
        sorted[index]
    };
    [rank(0.25), rank(0.5), rank(0.75)]
}

/// The samples of a paired comparison: each round timed the baseline and tethered back to
/// back (`round_trip_paired`, `concurrent_paired`, `tree_paired`, `busy_paired`), so drift
/// slower than a round cancels out of the per-round ratio and difference.
#[derive(Debug, Default)]
pub struct Paired {
    /// The baseline's time per unit (a round trip, a token), one per round.
    pub baseline: Vec<Duration>,
    /// tethered's time per unit, one per round.
    pub tethered: Vec<Duration>,
    /// tethered / baseline, one per round.
    pub ratios: Vec<f64>,
}

impl Paired {
    /// Records one round: the time each variant took for `units` of its work. The ratio comes
    /// from the totals, before the division to a time per unit rounds them.
    pub fn push(&mut self, baseline: Duration, tethered: Duration, units: u32) {
        self.ratios
            .push(tethered.as_secs_f64() / baseline.as_secs_f64());
        self.baseline.push(baseline / units);
        self.tethered.push(tethered / units);
    }

    /// tethered's time minus the baseline's, per unit, in nanoseconds: one per round.
    pub fn differences_ns(&self) -> Vec<f64> {
        self.baseline
            .iter()
            .zip(&self.tethered)
            .map(|(baseline, tethered)| tethered.as_nanos() as f64 - baseline.as_nanos() as f64)
            .collect()
    }

    /// Prints the case's line (medians per unit, and the ratio's median and quartiles) and
    /// returns its JSON field, `"name": {...}`, with the baseline's summary under
    /// `baseline_key`.
    ///
    /// # Panics
    ///
    /// If no round was recorded.
    pub fn report(&self, name: &str, baseline_key: &str) -> String {
        self.report_as(name, baseline_key, "tethered")
    }

    /// As [`report`](Self::report), for a pair whose second variant is not tethered (a
    /// floor, or tethered against a floor): its summary goes under `measured_key`.
    ///
    /// # Panics
    ///
    /// If no round was recorded.
    pub fn report_as(&self, name: &str, baseline_key: &str, measured_key: &str) -> String {
        let baseline = Summary::of(&self.baseline);
        let measured = Summary::of(&self.tethered);
        let [q1, ratio, q3] = quartiles(&self.ratios);
        println!(
            "{name:<10} {baseline_key} median {:>8.1} ns  {measured_key} median {:>8.1} ns  \
             per-round ratio median {ratio:.3} (quartiles {q1:.3}-{q3:.3}, {} rounds)",
            baseline.median_ns,
            measured.median_ns,
            self.ratios.len()
        );
        format!(
            "\"{name}\": {{\"{baseline_key}\": {}, \"{measured_key}\": {}, \"ratio_median\": {ratio:.4}, \
             \"ratio_q1\": {q1:.4}, \"ratio_q3\": {q3:.4}}}",
            baseline.to_json(),
            measured.to_json()
        )
    }

    /// As [`report`](Self::report), and also the median and quartiles of the per-round
    /// difference ([`differences_ns`](Self::differences_ns)): for a latency, whose verdict is
    /// what tethered adds in nanoseconds (the ratio is context). The JSON field gains
    /// `difference_median_ns`, `difference_q1_ns` and `difference_q3_ns`.
    ///
    /// # Panics
    ///
    /// If no round was recorded.
    pub fn report_with_difference(&self, name: &str, baseline_key: &str) -> String {
        let field = self.report(name, baseline_key);
        let [q1, difference, q3] = quartiles(&self.differences_ns());
        println!(
            "{name:<10} per-round difference (tethered - {baseline_key}) median {difference:+.0} ns \
             (quartiles {q1:+.0} to {q3:+.0} ns)"
        );
        let field = field.strip_suffix('}').expect("the field is a JSON object");
        format!(
            "{field}, \"difference_median_ns\": {difference:.1}, \"difference_q1_ns\": {q1:.1}, \
             \"difference_q3_ns\": {q3:.1}}}"
        )
    }
}

/// A closure's "I am polling (or about to park)" flag and the time it saw the cancel, for the
/// cancel-to-observe benchmarks (`latency`, `busy_paired`).
///
/// The closure stores `true` in its half of the flag once it polls, and sends the time at
/// which it saw the cancel; the cancelling side waits for the flag, takes the time right
/// before it cancels, and the latency is the difference. Both are the same monotonic clock.
#[derive(Debug)]
pub struct Probe {
    ready: Arc<AtomicBool>,
    seen: Receiver<Instant>,
}

impl Probe {
    /// The probe, and what the closure keeps: its half of the flag and the sender.
    pub fn new() -> (Self, Arc<AtomicBool>, SyncSender<Instant>) {
        let ready = Arc::new(AtomicBool::new(false));
        let (tx, seen) = sync_channel(1);
        (
            Probe {
                ready: ready.clone(),
                seen,
            },
            ready,
            tx,
        )
    }

    /// Spins until the closure said it polls (or is about to park).
    pub fn wait_ready(&self) {
        while !self.ready.load(Ordering::Acquire) {
            spin_loop();
        }
    }

    /// Runs `cancel` and returns how long after its start the closure saw it.
    ///
    /// # Panics
    ///
    /// If the closure dropped its sender without sending.
    pub fn time(&self, cancel: impl FnOnce()) -> Duration {
        let start = Instant::now();
        cancel();
        let seen = self
            .seen
            .recv()
            .expect("the closure reports when it saw the cancel");
        seen.saturating_duration_since(start)
    }
}

/// The busy closure of the cancel-to-observe benchmarks: says it polls, spins (one check of
/// `stopped` per turn) until `stopped` says so, and sends the time at which it saw it. Generic,
/// so each caller's check is inlined into its own loop, as if written there.
#[inline]
pub fn spin_until(
    ready: &AtomicBool,
    seen: &SyncSender<Instant>,
    mut stopped: impl FnMut() -> bool,
) {
    ready.store(true, Ordering::Release);
    while !stopped() {
        std::hint::black_box(());
    }
    let _ = seen.send(Instant::now());
}

/// Order statistics of a set of latency samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// How many samples.
    pub samples: usize,
    /// The smallest sample, in nanoseconds.
    pub min_ns: f64,
    /// The median, in nanoseconds.
    pub median_ns: f64,
    /// The 90th percentile (nearest rank), in nanoseconds.
    pub p90_ns: f64,
    /// The 99th percentile (nearest rank), in nanoseconds.
    pub p99_ns: f64,
    /// The mean, in nanoseconds.
    pub mean_ns: f64,
}

impl Summary {
    /// Summarises `samples`.
    ///
    /// # Panics
    ///
    /// If `samples` is empty.
    pub fn of(samples: &[Duration]) -> Self {
        assert!(!samples.is_empty(), "no samples to summarise");
        let mut ns: Vec<f64> = samples.iter().map(|d| d.as_nanos() as f64).collect();
        ns.sort_by(f64::total_cmp);
        let rank = |p: f64| {
            // Nearest-rank percentile: the smallest sample with at least p of them at or below it.
            let index = ((p * ns.len() as f64).ceil() as usize).clamp(1, ns.len()) - 1;
            ns[index]
        };
        Summary {
            samples: ns.len(),
            min_ns: ns[0],
            median_ns: rank(0.5),
            p90_ns: rank(0.9),
            p99_ns: rank(0.99),
            mean_ns: ns.iter().sum::<f64>() / ns.len() as f64,
        }
    }

    /// The summary as a JSON object.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        let _ = write!(
            out,
            "{{\"samples\": {}, \"min_ns\": {:.1}, \"median_ns\": {:.1}, \"p90_ns\": {:.1}, \
             \"p99_ns\": {:.1}, \"mean_ns\": {:.1}}}",
            self.samples, self.min_ns, self.median_ns, self.p90_ns, self.p99_ns, self.mean_ns
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_ratios_come_from_the_totals() {
        let mut paired = Paired::default();
        paired.push(
            Duration::from_nanos(3_000),
            Duration::from_nanos(2_999),
            1_000,
        );
        assert_eq!(paired.baseline, [Duration::from_nanos(3)]);
        assert_eq!(paired.tethered, [Duration::from_nanos(2)]);
        assert!((paired.ratios[0] - 2_999.0 / 3_000.0).abs() < 1e-12);
        let field = paired.report("case", "raw");
        assert!(
            field.starts_with("\"case\": {\"raw\": {\"samples\": 1,"),
            "{field}"
        );
        assert!(field.contains("\"ratio_median\": 0.9997"), "{field}");
    }

    #[test]
    fn paired_differences_are_per_unit_and_reported_with_quartiles() {
        let mut paired = Paired::default();
        for (baseline, tethered) in [(300, 450), (310, 400), (290, 500)] {
            paired.push(
                Duration::from_nanos(baseline),
                Duration::from_nanos(tethered),
                1,
            );
        }
        assert_eq!(paired.differences_ns(), [150.0, 90.0, 210.0]);
        let field = paired.report_with_difference("pool", "atomic_bool");
        assert!(
            field.ends_with(
                "\"difference_median_ns\": 150.0, \"difference_q1_ns\": 90.0, \
                 \"difference_q3_ns\": 210.0}"
            ),
            "{field}"
        );
    }

    #[test]
    fn quartiles_are_nearest_rank() {
        let values: Vec<f64> = (1..=8).rev().map(f64::from).collect();
        assert_eq!(quartiles(&values), [2.0, 4.0, 6.0]);
        assert_eq!(quartiles(&[3.0]), [3.0, 3.0, 3.0]);
    }

    #[test]
    fn summary_uses_nearest_rank_percentiles() {
        let samples: Vec<Duration> = (1..=100).map(Duration::from_nanos).collect();
        let summary = Summary::of(&samples);
        assert_eq!(summary.samples, 100);
        assert_eq!(summary.min_ns, 1.0);
        assert_eq!(summary.median_ns, 50.0);
        assert_eq!(summary.p90_ns, 90.0);
        assert_eq!(summary.p99_ns, 99.0);
        assert_eq!(summary.mean_ns, 50.5);
    }

    #[test]
    fn invocation_filter_selects_by_substring() {
        let all = Invocation {
            measure: true,
            filter: None,
        };
        assert!(all.selects("busy/tethered"));
        let busy = Invocation {
            measure: true,
            filter: Some("busy".into()),
        };
        assert!(busy.selects("busy/tethered"));
        assert!(!busy.selects("parked/tethered"));
    }
}
