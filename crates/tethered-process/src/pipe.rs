//! [`Pipe`]: a captured stdout or stderr, set non-blocking and read by the supervisor whenever
//! `poll` says it is readable, so a chatty child never blocks on a full pipe (64 KiB on Linux)
//! and no thread is spent per pipe.

use std::io;
use std::os::fd::OwnedFd;

use crate::output::Captured;

/// How much one read takes from the pipe.
pub(crate) const CHUNK: usize = 16 * 1024;

/// How many chunks one readiness reads at most before the supervisor turns to its other
/// children: a child that floods its pipe (`yes`) cannot starve the rest.
const CHUNKS_PER_TURN: usize = 16;

/// A pipe being read into memory.
pub(crate) struct Pipe {
    /// `None` once the pipe has ended (or failed).
    fd: Option<OwnedFd>,
    bytes: Vec<u8>,
    total: u64,
    limit: usize,
}

impl Pipe {
    /// Sets `fd` non-blocking and keeps at most `limit` bytes of what it gives.
    pub(crate) fn new(fd: OwnedFd, limit: usize) -> io::Result<Pipe> {
        rustix::io::ioctl_fionbio(&fd, true)?;
        Ok(Pipe {
            fd: Some(fd),
            bytes: Vec::new(),
            total: 0,
            limit,
        })
    }

    /// The pipe while it is open, for `poll`.
    pub(crate) fn fd(&self) -> Option<&OwnedFd> {
        self.fd.as_ref()
    }

    pub(crate) fn is_open(&self) -> bool {
        self.fd.is_some()
    }

    /// Reads what the pipe holds now (up to a turn's worth), into `scratch` first.
    pub(crate) fn read_ready(&mut self, scratch: &mut [u8]) {
        for _ in 0..CHUNKS_PER_TURN {
            let Some(fd) = &self.fd else {
                return;
            };
            match rustix::io::read(fd, &mut *scratch) {
                // The write end is closed everywhere: the pipe has ended.
                Ok(0) => {
                    self.fd = None;
                    return;
                }
                Ok(read) => {
                    self.total += read as u64;
                    let room = self.limit.saturating_sub(self.bytes.len());
                    self.bytes.extend_from_slice(&scratch[..read.min(room)]);
                }
                Err(rustix::io::Errno::AGAIN) => return,
                Err(rustix::io::Errno::INTR) => {}
                // A pipe read fails only if the pipe is gone: nothing more will come.
                Err(_) => {
                    self.fd = None;
                    return;
                }
            }
        }
    }

    /// What was read; closes the pipe if it is still open (`still_open` then says so, and
    /// whatever a process outside the group writes from now on is lost to it).
    pub(crate) fn collect(self) -> Captured {
        Captured {
            truncated: self.total > self.bytes.len() as u64,
            total: self.total,
            still_open: self.fd.is_some(),
            bytes: self.bytes,
        }
    }
}
