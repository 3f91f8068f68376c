//! The signals that begin a [`Server`](crate::Server)'s shutdown.

use std::fmt;

/// A signal that began a shutdown.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Signal {
    /// SIGTERM: what systemd, Kubernetes and `kill` send.
    Terminate,
    /// SIGINT (Ctrl-C in a terminal; the only one where there are no Unix signals).
    Interrupt,
}

impl fmt::Display for Signal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Signal::Terminate => "SIGTERM",
            Signal::Interrupt => "SIGINT",
        })
    }
}

/// The first of SIGTERM and SIGINT.
///
/// # Panics
///
/// If the handlers cannot be installed (the runtime has no IO driver).
#[cfg(unix)]
pub(crate) async fn first_signal() -> Signal {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate())
        .expect("the server's runtime has no IO driver (build it with `enable_all`)");
    let mut interrupt = signal(SignalKind::interrupt())
        .expect("the server's runtime has no IO driver (build it with `enable_all`)");
    tokio::select! {
        _ = terminate.recv() => Signal::Terminate,
        _ = interrupt.recv() => Signal::Interrupt,
    }
}

/// Ctrl-C, where there are no Unix signals.
#[cfg(not(unix))]
pub(crate) async fn first_signal() -> Signal {
    let _ = tokio::signal::ctrl_c().await;
    Signal::Interrupt
}
