//! The supervisor thread's loop: sleep in `poll`, then act on what woke it.

use std::collections::HashMap;
use std::io::{ErrorKind, Read};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};

use super::Supervisor;
use crate::child::{Source, Watched};
use crate::pipe::CHUNK;

/// How long the loop backs off when `poll` itself fails, before it looks at everything as if
/// `poll` had said so (see `sleep`): it never spins, and never stops watching.
const POLL_FAILED_BACKOFF: Duration = Duration::from_millis(10);

/// Runs for the life of the process.
pub(super) fn run(supervisor: &Supervisor, woken: &UnixStream) {
    let mut children: HashMap<u64, Watched> = HashMap::new();
    let mut scratch = vec![0u8; CHUNK];
    let mut ready: Vec<(u64, Source)> = Vec::new();
    loop {
        let now = Instant::now();
        let timeout = children
            .values()
            .filter_map(Watched::next_wake)
            .min()
            .map(|wake| wake.saturating_duration_since(now));
        let wake_ready = sleep(&children, woken, timeout, &mut ready);
        supervisor
            .inbox
            .collect(|| {
                if wake_ready {
                    drain(woken);
                }
            })
            .deliver(&mut children);
        let now = Instant::now();
        for (id, source) in ready.drain(..) {
            if let Some(child) = children.get_mut(&id) {
                child.ready(source, now, &mut scratch);
            }
        }
        let mut done = Vec::new();
        for (id, child) in &mut children {
            child.tick(now);
            if child.is_done(now) {
                done.push(*id);
            }
        }
        for id in done {
            if let Some(child) = children.remove(&id) {
                child.finish();
            }
        }
    }
}

/// Sleeps in `poll` until a descriptor is ready or `timeout` passed; lists the ready
/// descriptors of children in `ready`, and returns whether the wake channel is readable.
fn sleep(
    children: &HashMap<u64, Watched>,
    woken: &UnixStream,
    timeout: Option<Duration>,
    ready: &mut Vec<(u64, Source)>,
) -> bool {
    let mut fds = Vec::with_capacity(1 + children.len() * 3);
    let mut keys = Vec::with_capacity(children.len() * 3);
    fds.push(PollFd::new(woken, PollFlags::IN));
    for (id, child) in children {
        child.poll_fds(|source, fd| {
            fds.push(PollFd::new(fd, PollFlags::IN));
            keys.push((*id, source));
        });
    }
    // A timeout too long for a `Timespec` is as good as none.
    let timeout = timeout.and_then(|timeout| Timespec::try_from(timeout).ok());
    match rustix::event::poll(&mut fds, timeout.as_ref()) {
        Ok(_) | Err(rustix::io::Errno::INTR) => {}
        Err(_) => {
            // Out of memory, or more descriptors than a lowered RLIMIT_NOFILE allows: treat
            // every descriptor as ready. Each child is then looked at with `waitid`, and one
            // whose pidfd was not really ready is watched by polling from now on, so the set
            // shrinks to the pipes; reads are non-blocking.
            std::thread::sleep(POLL_FAILED_BACKOFF);
            ready.extend(keys);
            return true;
        }
    }
    for (fd, key) in fds[1..].iter().zip(keys) {
        if !fd.revents().is_empty() {
            ready.push(key);
        }
    }
    !fds[0].revents().is_empty()
}

/// Empties the wake channel.
fn drain(mut woken: &UnixStream) {
    let mut bytes = [0u8; 64];
    loop {
        match woken.read(&mut bytes) {
            Ok(0) => return,
            Ok(_) => {}
            Err(err) if err.kind() == ErrorKind::Interrupted => {}
            // `WouldBlock`: empty.
            Err(_) => return,
        }
    }
}
