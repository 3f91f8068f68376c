//! Reading a child's piped stdout or stderr on a thread of its own, so that a chatty child never
//! blocks on a full pipe (64 KiB on Linux) while its waiter waits for it to exit.

use std::io::{self, Read};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread;
use std::time::Instant;

use crate::output::Captured;

/// How much one read takes from the pipe.
const CHUNK: usize = 16 * 1024;

/// A pipe being read into memory by its own thread.
pub(crate) struct Capture {
    buffer: Arc<Mutex<Buffer>>,
    /// Disconnected when the reader thread has seen the end of the pipe (or an error).
    finished: mpsc::Receiver<()>,
}

struct Buffer {
    bytes: Vec<u8>,
    total: u64,
    limit: usize,
    /// The output was handed out: later reads are discarded.
    collected: bool,
}

impl Capture {
    /// Starts a thread that reads `pipe` to its end, keeping at most `limit` bytes.
    pub(crate) fn start<R>(pipe: R, limit: usize, thread_name: &str) -> io::Result<Capture>
    where
        R: Read + Send + 'static,
    {
        let buffer = Arc::new(Mutex::new(Buffer {
            bytes: Vec::new(),
            total: 0,
            limit,
            collected: false,
        }));
        let (finished_tx, finished) = mpsc::channel::<()>();
        let shared = buffer.clone();
        thread::Builder::new()
            .name(thread_name.to_owned())
            .spawn(move || {
                // Dropped when the thread ends, however it ends: that is the signal.
                let _finished = finished_tx;
                read_to_end(pipe, &shared);
            })?;
        Ok(Capture { buffer, finished })
    }

    /// What was read, once the pipe has ended or `until` has passed (then `still_open`).
    pub(crate) fn collect(self, until: Instant) -> Captured {
        let timeout = until.saturating_duration_since(Instant::now());
        let still_open = matches!(
            self.finished.recv_timeout(timeout),
            Err(RecvTimeoutError::Timeout)
        );
        let mut buffer = lock(&self.buffer);
        buffer.collected = true;
        let bytes = std::mem::take(&mut buffer.bytes);
        Captured {
            truncated: buffer.total > bytes.len() as u64,
            total: buffer.total,
            bytes,
            still_open,
        }
    }
}

fn read_to_end<R: Read>(mut pipe: R, buffer: &Mutex<Buffer>) {
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let read = match pipe.read(&mut chunk) {
            Ok(0) => return,
            Ok(read) => read,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            // A pipe read fails only if the pipe is gone; nothing more will come.
            Err(_) => return,
        };
        let mut buffer = lock(buffer);
        buffer.total += read as u64;
        if !buffer.collected {
            let room = buffer.limit.saturating_sub(buffer.bytes.len());
            let keep = read.min(room);
            buffer.bytes.extend_from_slice(&chunk[..keep]);
        }
    }
}

fn lock(buffer: &Mutex<Buffer>) -> std::sync::MutexGuard<'_, Buffer> {
    // Nothing panics while holding it; if something did, the bytes are still fine to read.
    buffer.lock().unwrap_or_else(PoisonError::into_inner)
}
