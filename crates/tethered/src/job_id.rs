//! [`JobId`]: a job's number, unique within the process.

use std::fmt;

/// A job's number, unique within the process for as long as it runs: on its handle
/// ([`Tethered::id`](crate::Tethered::id)), on the [`Straggler`](crate::Straggler)s a shutdown
/// leaves behind, in a [`JobGroup`](crate::JobGroup)'s results, and in the job's tracing span.
/// Ids count up from 1 in the order jobs are made.
///
/// ```
/// use tethered::{AbortableNative, Tethered};
///
/// let first = AbortableNative::spawn(|_| ());
/// let second = AbortableNative::spawn(|_| ());
/// assert!(first.id() < second.id());
/// assert_eq!(format!("{}", first.id()), format!("#{}", first.id().get()));
/// # first.join_blocking().unwrap();
/// # second.join_blocking().unwrap();
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JobId(u64);

impl JobId {
    /// A new id, never handed out before in this process.
    pub(crate) fn next() -> JobId {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        // ORDERING: Relaxed: only uniqueness matters, which any ordering of one RMW gives.
        JobId(NEXT.fetch_add(1, Ordering::Relaxed))
    }

    /// The number.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// `#` and the number, as reports print it.
impl fmt::Display for JobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "#{}", self.0)
    }
}
