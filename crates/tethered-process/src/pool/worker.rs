//! [`Worker`]: a pool's worker process as a request's turn sees it: its pipes, and the request's
//! token.

use std::fmt;
use std::io::{self, BufRead, BufReader, Write};
use std::process::{ChildStdin, ChildStdout};

use rustix::event::{PollFd, PollFlags, Timespec};
use tethered::CancelToken;

use crate::job::ProcessJob;

/// Why a worker is not lent again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Unfit {
    /// Its request was cancelled during its turn: its group was told to stop.
    Cancelled,
    /// Its process ended by itself (during a turn, or while idle: see [`Worker::is_gone`]).
    Died,
    /// Its protocol broke (an I/O error, its stdout closed), its turn panicked, or the turn
    /// retired it.
    Broken(String),
}

impl std::fmt::Display for Unfit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unfit::Cancelled => f.write_str("its request was cancelled during its turn"),
            Unfit::Died => f.write_str("its process ended"),
            Unfit::Broken(why) => f.write_str(why),
        }
    }
}

/// A long-lived worker process of a [`Pool`](crate::Pool), lent to one request's turn.
///
/// The turn talks to it over its stdin and stdout, with [`send_line`](Self::send_line) and
/// [`read_line`](Self::read_line) for line protocols, or the raw pipes. An I/O error through the
/// helpers (the worker closed its stdout, a broken pipe) retires the worker: the pool stops it
/// and starts a fresh one. A turn that talks through the raw pipes and leaves the protocol out
/// of step calls [`retire`](Self::retire) itself.
///
/// If the request is cancelled during its turn (its handle dropped, a timeout, a shutdown), the
/// worker's process group is stopped at once, so a blocking read or write of the turn ends
/// with an error, and the worker is replaced.
pub struct Worker {
    id: u64,
    pub(super) job: ProcessJob,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    /// The token of the request whose turn this is.
    token: CancelToken,
    /// Why the worker must not serve again, if it must not.
    retired: Option<Unfit>,
    /// Turns it completed.
    pub(super) served: u64,
}

impl Worker {
    pub(super) fn new(id: u64, mut job: ProcessJob) -> io::Result<Worker> {
        let (Some(stdin), Some(stdout)) = (job.take_stdin(), job.take_stdout()) else {
            return Err(io::Error::other(
                "a pool's worker needs its stdin and stdout piped",
            ));
        };
        Ok(Worker {
            id,
            job,
            stdin,
            stdout: BufReader::new(stdout),
            token: CancelToken::never(),
            retired: None,
            served: 0,
        })
    }

    /// The worker's number in its pool: 1 for the first worker started, counting up with each
    /// replacement.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The worker's process id.
    pub fn pid(&self) -> u32 {
        // A pool starts its workers with `Process::spawn`, which starts the child at once.
        self.job.pid().unwrap_or_default()
    }

    /// Whether the worker's process is gone, looked at right now: its job finished (the
    /// supervisor reaped it), or its stdout hung up (it exited, or closed the pipe a turn would
    /// read from). A seat looks before every turn, so no request goes to a worker that left
    /// while idle (an idle timeout of its own, say).
    pub(super) fn is_gone(&self) -> bool {
        if tethered::Tethered::is_finished(&self.job) {
            return true;
        }
        if !self.stdout.buffer().is_empty() {
            // Unasked-for output waits in the buffer: the worker is there.
            return false;
        }
        let mut fds = [PollFd::new(self.stdout.get_ref(), PollFlags::IN)];
        let zero = Timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        match rustix::event::poll(&mut fds, Some(&zero)) {
            Ok(_) => fds[0]
                .revents()
                .intersects(PollFlags::HUP | PollFlags::ERR | PollFlags::NVAL),
            // Cannot tell (out of memory, say): the turn's own I/O will.
            Err(_) => false,
        }
    }

    /// The token of the request whose turn this is: a turn that loops checks it between steps.
    pub fn token(&self) -> &CancelToken {
        &self.token
    }

    /// The worker's stdin, to write a request.
    pub fn stdin(&mut self) -> &mut ChildStdin {
        &mut self.stdin
    }

    /// The worker's stdout, buffered, to read a reply.
    pub fn stdout(&mut self) -> &mut BufReader<ChildStdout> {
        &mut self.stdout
    }

    /// Writes `line` and a newline to the worker's stdin, and flushes it.
    ///
    /// # Errors
    ///
    /// The write's error (the worker is gone: a broken pipe); the worker is then retired.
    pub fn send_line(&mut self, line: &str) -> io::Result<()> {
        let written = writeln!(self.stdin, "{line}").and_then(|()| self.stdin.flush());
        written.inspect_err(|err| {
            self.retire_for(Unfit::Broken(format!("writing to it failed: {err}")))
        })
    }

    /// Reads one line from the worker's stdout, without its line ending.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::UnexpectedEof`] if the worker closed its stdout (it died, or was
    /// stopped by a cancel), or the read's error; the worker is then retired.
    pub fn read_line(&mut self) -> io::Result<String> {
        let mut line = String::new();
        match self.stdout.read_line(&mut line) {
            Ok(0) => {
                let err = io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!(
                        "worker {} (pid {}) closed its stdout before answering",
                        self.id,
                        self.pid()
                    ),
                );
                self.retire_for(Unfit::Broken(err.to_string()));
                Err(err)
            }
            Ok(_) => {
                let end = line.trim_end_matches(['\n', '\r']).len();
                line.truncate(end);
                Ok(line)
            }
            Err(err) => {
                self.retire_for(Unfit::Broken(format!("reading from it failed: {err}")));
                Err(err)
            }
        }
    }

    /// Tells the pool not to lend this worker again (the protocol is out of step, say): once
    /// the turn returns, it is stopped and a fresh worker takes its place.
    pub fn retire(&mut self) {
        self.retire_for(Unfit::Broken("its turn retired it".to_owned()));
    }

    pub(super) fn retire_for(&mut self, why: Unfit) {
        self.retired.get_or_insert(why);
    }

    /// Its request was cancelled during its turn: that is why it goes, whatever its turn's
    /// I/O saw once the stop began.
    pub(super) fn cancelled_mid_turn(&mut self) {
        self.retired = Some(Unfit::Cancelled);
    }

    /// Why the worker must not serve again, if it must not: its process ended, it was
    /// cancelled during a turn, or retired.
    pub(super) fn unfit(&self) -> Option<Unfit> {
        if tethered::Tethered::is_finished(&self.job)
            && !matches!(self.retired, Some(Unfit::Cancelled))
        {
            return Some(Unfit::Died);
        }
        self.retired.clone()
    }

    /// Counts the worker's process idle (between turns) or running in `tethered::stats()`.
    pub(super) fn set_idle(&self, idle: bool) {
        self.job.set_idle(idle);
    }

    pub(super) fn begin_turn(&mut self, token: CancelToken) {
        self.token = token;
    }

    pub(super) fn end_turn(&mut self) {
        self.token = CancelToken::never();
    }
}

impl fmt::Debug for Worker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Worker")
            .field("id", &self.id)
            .field("pid", &self.pid())
            .field("served", &self.served)
            .field("retired", &self.retired)
            .finish_non_exhaustive()
    }
}
