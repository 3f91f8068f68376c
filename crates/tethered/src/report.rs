//! [`ShutdownReport`] and [`Straggler`]: what a scope's shutdown says about its jobs.

use std::fmt;
use std::time::Duration;

use crate::sync::Arc;

/// The outcome of [`NativeScope::shutdown`](crate::NativeScope::shutdown): how many jobs returned within the grace period,
/// and which did not.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShutdownReport {
    /// Jobs that were unfinished when the shutdown began (all were cancelled).
    pub cancelled: usize,
    /// Of those, jobs whose closure returned (or was skipped) within the grace period.
    pub returned: usize,
    /// Jobs still running at the deadline. They run on, counted in
    /// [`stats()`](crate::stats)`.detached` and in [`NativeScope::len`](crate::NativeScope::len) until they return.
    pub stragglers: Vec<Straggler>,
    /// The grace period.
    pub grace: Duration,
    /// How long the shutdown took.
    pub elapsed: Duration,
}

impl ShutdownReport {
    /// Whether every job returned in time.
    pub fn is_clean(&self) -> bool {
        self.stragglers.is_empty()
    }
}

impl fmt::Display for ShutdownReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} job(s) cancelled, {} returned in {:.1?} (grace {:?})",
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

/// A job that was still running when a scope's shutdown grace ran out.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Straggler {
    /// The job's process-wide id.
    pub id: u64,
    /// The job's name, if it was given one.
    pub name: Option<Arc<str>>,
}

impl fmt::Display for Straggler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(name) => write!(f, "#{} \"{name}\"", self.id),
            None => write!(f, "#{}", self.id),
        }
    }
}
