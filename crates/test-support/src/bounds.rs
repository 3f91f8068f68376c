//! The two durations every scenario is written against.

use std::time::Duration;

/// The behavioural bound of every scenario: a cancelled job's closure has returned within this
/// time of the cancel, and a naive closure still runs this long after its caller gave up.
///
/// Generous on purpose: the measured times are micro- to milliseconds, and the bound is there
/// to tell "returns" from "runs on", not to benchmark a shared machine.
pub const RETURN_BOUND: Duration = Duration::from_secs(1);

/// How long a test waits for anything that should take milliseconds before it fails. Every
/// wait is bounded by it, so a broken behaviour fails a test instead of hanging the suite.
pub const PATIENCE: Duration = Duration::from_secs(20);
