//! [`report`]: the median/worst line every scenario prints, and the bound it checks.

use std::time::Duration;

use crate::bounds::RETURN_BOUND;

/// Median and worst of a scenario's cancel-to-return times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Timings {
    /// The middle sample (the upper one of the two middles for an even count).
    pub(crate) median: Duration,
    /// The largest sample.
    pub(crate) worst: Duration,
}

impl Timings {
    /// The median and worst of `samples`; `None` if there are none.
    pub(crate) fn of(samples: impl IntoIterator<Item = Duration>) -> Option<Self> {
        let mut samples: Vec<Duration> = samples.into_iter().collect();
        samples.sort();
        Some(Timings {
            median: *samples.get(samples.len() / 2)?,
            worst: *samples.last()?,
        })
    }
}

/// Prints the cancel-to-return times of one scenario (shown with `--nocapture`, quoted by the
/// notes on the adapters) and checks each against [`RETURN_BOUND`].
#[track_caller]
pub fn report(runtime: &str, scenario: &str, samples: impl IntoIterator<Item = Duration>) {
    let samples: Vec<Duration> = samples.into_iter().collect();
    let count = samples.len();
    let Timings { median, worst } =
        Timings::of(samples).unwrap_or_else(|| panic!("{scenario}: nothing was measured"));
    eprintln!(
        "[{runtime}] {scenario}: cancel-to-return over {count} closure(s): median {median:?}, \
         worst {worst:?}"
    );
    assert!(
        worst <= RETURN_BOUND,
        "{scenario}: a closure returned {worst:?} after its cancel (bound {RETURN_BOUND:?})"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn timings_are_the_middle_and_the_largest_sample() {
        assert_eq!(
            Timings::of([3 * MS, MS, 2 * MS]),
            Some(Timings {
                median: 2 * MS,
                worst: 3 * MS
            })
        );
        assert_eq!(Timings::of([MS, 4 * MS]).map(|t| t.median), Some(4 * MS));
        assert_eq!(Timings::of([]), None);
    }

    #[test]
    fn report_accepts_times_within_the_bound() {
        report("test", "within the bound", [MS, RETURN_BOUND]);
    }

    #[test]
    #[should_panic(expected = "a closure returned")]
    fn report_fails_a_time_over_the_bound() {
        report("test", "over the bound", [MS, RETURN_BOUND + MS]);
    }

    #[test]
    #[should_panic(expected = "nothing was measured")]
    fn report_fails_a_scenario_that_measured_nothing() {
        report("test", "empty", []);
    }
}
