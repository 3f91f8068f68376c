//! [`ServerReport`], [`ShutdownCause`] and [`ServerError`]: how a [`Server`](crate::Server)'s
//! run ended.

use std::fmt;

use tethered::{CancelReason, ShutdownReport};

use crate::signal::Signal;

/// What began a [`Server`](crate::Server)'s shutdown.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShutdownCause {
    /// A signal.
    Signal(Signal),
    /// The server's source was cancelled, with this reason.
    Cancelled(CancelReason),
    /// The main future returned by itself (with `Ok`, or with the error that
    /// [`Server::run`](crate::Server::run) hands back).
    MainReturned,
}

impl fmt::Display for ShutdownCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShutdownCause::Signal(signal) => write!(f, "on {signal}"),
            ShutdownCause::Cancelled(reason) => write!(f, "on a cancel ({reason})"),
            ShutdownCause::MainReturned => f.write_str("as the main future returned"),
        }
    }
}

/// How a [`Server`](crate::Server)'s shutdown went: what began it, whether the main future
/// drained in time, and the one [`ShutdownReport`] of every scope and part it stopped.
///
/// ```
/// use std::time::Duration;
/// use tethered_server::{Server, ShutdownCause};
///
/// let server = Server::new()?;
/// let report = server
///     .run(Duration::from_secs(5), async { Ok::<(), std::io::Error>(()) })
///     .expect("the main future returned Ok");
/// assert_eq!(report.cause, ShutdownCause::MainReturned);
/// assert!(report.is_clean(), "{report}");
/// # Ok::<(), std::io::Error>(())
/// ```
#[non_exhaustive]
#[derive(Clone, Debug)]
pub struct ServerReport {
    /// What began it.
    pub cause: ShutdownCause,
    /// Whether the main future (the HTTP drain) returned within the deadline.
    pub drained: bool,
    /// The scopes' jobs and the parts' workers that were unfinished when the shutdown began,
    /// and what became of them (the stragglers are those still running at the deadline), with
    /// the grace and the time the whole shutdown took.
    pub shutdown: ShutdownReport,
}

impl ServerReport {
    /// Whether everything stopped within the deadline.
    pub fn is_clean(&self) -> bool {
        self.drained && self.shutdown.is_clean()
    }
}

impl fmt::Display for ServerReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "shutdown {}: {}; {}",
            self.cause,
            if self.drained {
                "drained"
            } else {
                "the drain did not finish"
            },
            self.shutdown,
        )
    }
}

/// The main future of [`Server::run`](crate::Server::run) failed: its error, and the report of
/// the shutdown that followed. An error whose `source` is the main future's.
#[derive(Debug)]
pub struct ServerError<E> {
    /// The main future's error.
    pub error: E,
    /// The shutdown that followed it.
    pub report: ServerReport,
}

impl<E> fmt::Display for ServerError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the server's main future failed; {}", self.report)
    }
}

impl<E: std::error::Error + 'static> std::error::Error for ServerError<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}
