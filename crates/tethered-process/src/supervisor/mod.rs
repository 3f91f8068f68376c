//! [`Supervisor`]: the one thread that watches, stops and reaps every tethered child.
//!
//! It sleeps in `poll` on every child's pidfd (readable once the child exited), every captured
//! pipe (non-blocking), and the read end of a wake channel that other threads write to when they
//! hand it a new child or a cancel (through the [`Inbox`]). Where a child has no pidfd (macOS,
//! a Linux before 5.3 or whose seccomp filter refuses `pidfd_open`, a child under a tracer, or
//! `TETHERED_PROCESS_WATCH=poll` in the environment) it looks at that child with
//! `waitid(WNOHANG | WNOWAIT)` between sleeps that start at 1 ms and double up to 20 ms. No
//! SIGCHLD handler is installed: signal dispositions belong to the application.
//!
//! However many children there are, this is one thread: the cost of a child is its entry in
//! a map and its descriptors in the `poll` set.
//!
//! The thread is started with the first child and lives as long as the process. If it cannot
//! be started, the spawn fails before any child exists.
//!
//! Fork: after `fork()` the supervisor thread does not exist in the child. Each process has
//! a supervisor of its own ([`PerProcess`]): a forked child that spawns a child process starts
//! its own supervisor, and never touches the parent's (whose lock may have been held by a
//! thread that no longer exists). Jobs started in the parent belong to the parent.

mod inbox;
mod run;

pub(crate) use inbox::{Entry, Inbox};

use std::io::{self, Write};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tethered::__private::PerProcess;

use crate::child::Watched;

/// The name of the supervisor's thread.
const THREAD_NAME: &str = "tethered-process";

/// The handle every spawning thread shares with the supervisor thread.
pub(crate) struct Supervisor {
    inbox: Inbox<Watched>,
    /// The write end of the wake channel (non-blocking: a full channel already wakes).
    wake: UnixStream,
    next_id: AtomicU64,
}

/// This process's supervisor, once started (one per process: see the module docs).
static RUNNING: PerProcess<Mutex<Option<Arc<Supervisor>>>> = PerProcess::new(|| Mutex::new(None));

impl Supervisor {
    /// This process's supervisor, started on first use.
    ///
    /// # Errors
    ///
    /// If the wake channel or the thread cannot be had from the OS.
    pub(crate) fn get() -> io::Result<Arc<Supervisor>> {
        let mut running = RUNNING.get().lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(supervisor) = &*running {
            return Ok(supervisor.clone());
        }
        let (wake, woken) = UnixStream::pair()?;
        wake.set_nonblocking(true)?;
        woken.set_nonblocking(true)?;
        let supervisor = Arc::new(Supervisor {
            inbox: Inbox::new(),
            wake,
            next_id: AtomicU64::new(1),
        });
        let shared = supervisor.clone();
        std::thread::Builder::new()
            .name(THREAD_NAME.to_owned())
            .spawn(move || run::run(&shared, &woken))?;
        *running = Some(supervisor.clone());
        Ok(supervisor)
    }

    /// An id for a new child, unique within the process.
    pub(crate) fn next_id(&self) -> u64 {
        // ORDERING: Relaxed: only uniqueness matters, which any ordering of one RMW gives.
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Hands `child` to the supervisor thread.
    pub(crate) fn watch(&self, child: Watched) {
        if self.inbox.post(child) {
            self.wake();
        }
    }

    /// Tells the supervisor thread that the job of child `id` was cancelled.
    pub(crate) fn cancel(&self, id: u64) {
        if self.inbox.cancel(id) {
            self.wake();
        }
    }

    fn wake(&self) {
        // `WouldBlock`: the channel is full of wake bytes, so the supervisor wakes anyway.
        // Nothing else fails on a connected socket pair whose other end lives as long as the
        // process.
        let _ = (&self.wake).write(&[1]);
    }
}

impl Entry for Watched {
    fn id(&self) -> u64 {
        Watched::id(self)
    }

    fn is_cancelled(&self) -> bool {
        Watched::is_cancelled(self)
    }

    fn stoppable(&self) -> bool {
        Watched::stoppable(self)
    }

    fn cancel_seen(&mut self) {
        Watched::cancel_seen(self, Instant::now());
    }

    fn reap_if_exited(&mut self) -> bool {
        Watched::reap_if_exited(self, Instant::now())
    }

    fn signal_stop(&mut self) {
        Watched::signal_stop(self, Instant::now());
    }
}
