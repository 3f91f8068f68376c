//! [`ShutdownReport`] and [`Straggler`]: what a shutdown says about the work it stopped, the
//! one shape of report for a scope, a worker pool and a server alike.

use std::fmt;
use std::time::Duration;

use crate::sync::Arc;

/// The outcome of a [`Shutdown`](crate::Shutdown) ([`NativeScope::shutdown`](crate::NativeScope::shutdown),
/// a worker pool's, a server's): how many jobs returned within the grace, and which did not.
///
/// ```
/// use std::time::Duration;
/// use tethered::NativeScope;
///
/// let scope = NativeScope::new();
/// scope.spawn(|token| token.wait())?.detach();
/// let report = scope.shutdown_blocking(Duration::from_secs(10));
/// assert_eq!((report.cancelled, report.returned), (1, 1));
/// assert!(report.is_clean(), "{report}");
/// // "1 job(s) cancelled, 1 returned; the shutdown took 52.0µs (grace 10s)": the time is
/// // the whole shutdown's, not one job's.
/// assert!(report.to_string().starts_with("1 job(s) cancelled, 1 returned; the shutdown took "));
/// # Ok::<(), tethered::SpawnError>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Jobs (or workers) that were unfinished when the shutdown began (all were cancelled).
    pub cancelled: usize,
    /// Of those, jobs whose closure returned (or was skipped) within the grace.
    pub returned: usize,
    /// Jobs still running at the deadline. They run on, counted in
    /// [`stats()`](crate::stats)`.detached` (and a scope's in [`NativeScope::len`](crate::NativeScope::len))
    /// until they return.
    pub stragglers: Vec<Straggler>,
    /// The grace.
    pub grace: Duration,
    /// How long the whole shutdown took, from its beginning until the last job returned (or
    /// the grace ran out): not any one job's time.
    pub elapsed: Duration,
}

impl ShutdownReport {
    /// An empty report: nothing was running, over `grace`, in `elapsed`.
    pub fn new(grace: Duration, elapsed: Duration) -> Self {
        ShutdownReport {
            cancelled: 0,
            returned: 0,
            stragglers: Vec::new(),
            grace,
            elapsed,
        }
    }

    /// Whether every job returned in time.
    pub fn is_clean(&self) -> bool {
        self.stragglers.is_empty()
    }

    /// Adds `other`'s counts and stragglers to this report, as one report of two parts shut
    /// down together: the counts add up, the stragglers are listed in id order, and the
    /// elapsed time is the longer of the two.
    pub fn merge(&mut self, other: ShutdownReport) {
        self.cancelled += other.cancelled;
        self.returned += other.returned;
        self.stragglers.extend(other.stragglers);
        self.stragglers.sort_by_key(|straggler| straggler.id);
        self.elapsed = self.elapsed.max(other.elapsed);
        self.grace = self.grace.max(other.grace);
    }
}

impl fmt::Display for ShutdownReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} job(s) cancelled, {} returned; the shutdown took {:.1?} (grace {:?})",
            self.cancelled, self.returned, self.elapsed, self.grace
        )?;
        if !self.stragglers.is_empty() {
            write!(
                f,
                "; {} still running, now detached:",
                self.stragglers.len()
            )?;
            for straggler in &self.stragglers {
                write!(f, " {straggler}")?;
            }
        }
        Ok(())
    }
}

/// A job that was still running when a shutdown's grace ran out.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Straggler {
    /// The job's id.
    pub id: crate::JobId,
    /// The job's name, if it was given one.
    pub name: Option<Arc<str>>,
}

impl Straggler {
    /// A straggler: the job `id`, named `name`.
    pub fn new(id: crate::JobId, name: Option<Arc<str>>) -> Self {
        Straggler { id, name }
    }
}

impl fmt::Display for Straggler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{} \"{name}\"", self.id),
            None => write!(f, "{}", self.id),
        }
    }
}
