//! [`StopSignal`]: the polite signal a cancelled child gets before the grace period starts.

use std::fmt;

/// The signal that asks a cancelled child to stop, sent to its process group when the job is
/// cancelled. If the child is still there when the grace period ends, SIGKILL follows.
///
/// ```
/// use tethered_process::StopSignal;
///
/// assert_eq!(StopSignal::default(), StopSignal::Term);
/// assert_eq!(StopSignal::Int.to_string(), "SIGINT");
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum StopSignal {
    /// SIGTERM, the default: what `kill`, systemd and Kubernetes send first.
    #[default]
    Term,
    /// SIGINT, as a terminal's Ctrl-C: Python turns it into `KeyboardInterrupt`, so `finally`
    /// blocks and context managers run.
    Int,
    /// SIGHUP: the terminal went away; many daemons reload or quit on it.
    Hup,
    /// SIGQUIT: quit, and (by default) dump core.
    Quit,
    /// SIGUSR1, for programs that document their own meaning for it.
    Usr1,
    /// SIGUSR2, likewise.
    Usr2,
}

impl StopSignal {
    /// The name of the signal, as `kill -l` prints it with the `SIG` prefix.
    pub fn name(self) -> &'static str {
        match self {
            StopSignal::Term => "SIGTERM",
            StopSignal::Int => "SIGINT",
            StopSignal::Hup => "SIGHUP",
            StopSignal::Quit => "SIGQUIT",
            StopSignal::Usr1 => "SIGUSR1",
            StopSignal::Usr2 => "SIGUSR2",
        }
    }

    #[cfg(unix)]
    pub(crate) fn to_rustix(self) -> rustix::process::Signal {
        use rustix::process::Signal;
        match self {
            StopSignal::Term => Signal::TERM,
            StopSignal::Int => Signal::INT,
            StopSignal::Hup => Signal::HUP,
            StopSignal::Quit => Signal::QUIT,
            StopSignal::Usr1 => Signal::USR1,
            StopSignal::Usr2 => Signal::USR2,
        }
    }
}

impl fmt::Display for StopSignal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
