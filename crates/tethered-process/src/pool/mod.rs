//! [`Pool`]: long-lived worker processes for request/response protocols over stdio, each
//! request tethered to the future that awaits it.
//!
//! # Files
//!
//! This file holds the pool's API; `state.rs` its shared state, `seat.rs` the threads that own
//! the workers, `worker.rs` the worker a turn is lent.

mod seat;
mod state;
mod worker;

pub use worker::Worker;

use std::fmt;
use std::io;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tethered::{AbortableNative, Builder, CancelReason, CancelSource};

use crate::builder::Process;
use crate::signal::StopSignal;
use seat::Task;
use state::{Guarded, Lifecycle, Pending};

/// How many workers in a row may fail to start (or end before serving a request) before the
/// pool gives up, unless [`PoolBuilder::max_failures`] says otherwise.
pub const DEFAULT_MAX_FAILURES: u32 = 5;

/// What the seats share.
struct Shared {
    make: Box<dyn Fn() -> Command + Send + Sync>,
    size: usize,
    grace: Duration,
    polite: StopSignal,
    max_failures: u32,
    /// Every request is a child of its token; cancelled with `Shutdown` when the pool closes.
    stop: CancelSource,
    guarded: Guarded,
}

impl Shared {
    fn spawn_worker(&self, id: u64) -> io::Result<Worker> {
        // The factory is user code: a panic in it is a failed start, not a dead seat.
        let mut command = tethered::catch_panic(|| (self.make)()).map_err(|panic| {
            io::Error::other(format!(
                "the pool's command factory panicked: {}",
                panic.message().unwrap_or("(no message)")
            ))
        })?;
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        let job = Process::new(command)
            .grace(self.grace)
            .polite_signal(self.polite)
            .capture_stdout(false)
            .job(Builder::new().name(format!("pool worker {id}")))
            .spawn()?;
        Worker::new(id, job)
    }

    /// A worker failed to start (or ended before serving a request): after
    /// `max_failures` in a row, the pool breaks, and every waiting request is stopped with
    /// the reason.
    fn start_failed(&self, why: &str) {
        let broken = {
            let mut state = self.guarded.lock();
            state.counts.start_failures += 1;
            state.failures_in_a_row += 1;
            if state.failures_in_a_row < self.max_failures || state.lifecycle != Lifecycle::Open {
                return;
            }
            let reason: Arc<str> = format!(
                "the worker pool gave up after {} workers in a row failed; the last: {why}",
                state.failures_in_a_row
            )
            .into();
            state.lifecycle = Lifecycle::Broken(reason.clone());
            for idle in state.idle.drain(..) {
                idle.close();
            }
            (reason, std::mem::take(&mut state.pending))
        };
        let (reason, pending) = broken;
        for Pending { task, link, .. } in pending {
            drop(link);
            task.abort.cancel(CancelReason::Custom(reason.clone()));
            // Dropping the unrun task finishes its request with that reason.
            drop(task);
        }
        self.guarded.changed.notify_all();
    }

    /// Closes the pool: no new request, every request cancelled with `Shutdown` (a running
    /// turn's worker is stopped), every seat told to stop its worker and end.
    fn close(&self) {
        {
            let mut state = self.guarded.lock();
            state.lifecycle = Lifecycle::Closed;
            for idle in state.idle.drain(..) {
                idle.close();
            }
        }
        // Waiting requests leave the queue through their cancel links; running ones stop
        // their workers through theirs.
        self.stop.cancel(CancelReason::Shutdown);
        let pending = std::mem::take(&mut self.guarded.lock().pending);
        drop(pending);
        self.guarded.changed.notify_all();
    }
}

/// Long-lived worker processes for a request/response protocol over their stdin and stdout,
/// each request tethered to the future that awaits it.
///
/// A request ([`run`](Self::run)) leases a worker, waiting for one while all are busy, and
/// its turn talks to the worker through a [`Worker`] on a thread of the pool. The request is
/// an [`AbortableNative`]: await it, time it out with any adapter's `timeout`, cancel it,
/// `cancel_after`. If it is cancelled while it waits, it leaves the queue; if it is cancelled
/// during its turn (its future dropped, a timeout, a shutdown), the worker's process group is
/// stopped at once (the polite signal, SIGKILL after the grace, reaped by the crate's
/// supervisor), the turn's blocking I/O ends with an error, and a fresh worker takes the
/// worker's place. A worker that dies by itself, or whose protocol broke (an I/O error through
/// [`Worker::read_line`] or [`Worker::send_line`], [`Worker::retire`]) is replaced too; one
/// that healthy-returns serves the next request.
///
/// A worker that fails to start, or ends before serving a request, is retried after a backoff
/// (10 ms, doubling to 1 s); after [`DEFAULT_MAX_FAILURES`] in a row the pool gives up: every
/// waiting and later request is stopped with a
/// [`CancelReason::Custom`] that names the last failure, and [`PoolStats::broken`] says so.
///
/// Each worker has a thread of the pool (`size` threads in all) that runs its turns, so a turn
/// may block on the pipes; the workers' processes are watched by the crate's one supervisor.
///
/// ```
/// use std::process::Command;
/// use std::time::Duration;
/// use tethered_process::Pool;
///
/// // Workers that answer each line with it upper-cased.
/// let pool = Pool::builder(|| {
///     let mut command = Command::new("python3");
///     command.args(["-u", "-c", "import sys\nfor line in sys.stdin: print(line.strip().upper())"]);
///     command
/// })
/// .size(2)
/// .build()?;
/// let request = pool.run(|worker| {
///     worker.send_line("hello")?;
///     worker.read_line()
/// });
/// assert_eq!(request.join_blocking()??, "HELLO");
/// let report = pool.shutdown_blocking(Duration::from_secs(10));
/// assert_eq!(report.still_running, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Pool {
    shared: Arc<Shared>,
}

/// Builds a [`Pool`]: made by [`Pool::builder`].
#[must_use = "a builder does nothing until `build` is called"]
pub struct PoolBuilder {
    make: Box<dyn Fn() -> Command + Send + Sync>,
    size: usize,
    grace: Duration,
    polite: StopSignal,
    max_failures: u32,
}

impl PoolBuilder {
    /// How many workers the pool keeps (default 1).
    pub fn size(mut self, size: usize) -> Self {
        self.size = size;
        self
    }

    /// The grace a stopped worker gets between the polite signal and SIGKILL (default
    /// [`DEFAULT_GRACE`](crate::DEFAULT_GRACE)).
    pub fn grace(mut self, grace: Duration) -> Self {
        self.grace = grace;
        self
    }

    /// The signal that asks a stopped worker to stop (default [`StopSignal::Term`]).
    pub fn polite_signal(mut self, signal: StopSignal) -> Self {
        self.polite = signal;
        self
    }

    /// How many workers in a row may fail before the pool gives up (default
    /// [`DEFAULT_MAX_FAILURES`]; at least 1).
    pub fn max_failures(mut self, failures: u32) -> Self {
        self.max_failures = failures.max(1);
        self
    }

    /// Starts the pool: its threads, and a worker for each. The workers start on the pool's
    /// threads; the first one is started here, so a command that cannot start at all (a missing
    /// program) is the error.
    ///
    /// # Errors
    ///
    /// [`io::ErrorKind::InvalidInput`] for a size of 0; the first worker's start error; the
    /// OS's refusal of a thread.
    pub fn build(self) -> io::Result<Pool> {
        if self.size == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a worker pool needs a size of at least 1",
            ));
        }
        let shared = Arc::new(Shared {
            make: self.make,
            size: self.size,
            grace: self.grace,
            polite: self.polite,
            max_failures: self.max_failures,
            stop: CancelSource::new(),
            guarded: Guarded::new(),
        });
        // The first start says whether the command starts at all; the first seat keeps it.
        let mut first = Some(shared.spawn_worker(1)?);
        shared.guarded.lock().counts.live += 1;
        let pool = Pool { shared };
        for number in 1..=pool.shared.size {
            seat::start(&pool.shared, number, first.take())?;
        }
        Ok(pool)
    }
}

impl fmt::Debug for PoolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolBuilder")
            .field("size", &self.size)
            .field("grace", &self.grace)
            .field("polite", &self.polite)
            .field("max_failures", &self.max_failures)
            .finish_non_exhaustive()
    }
}

impl Pool {
    /// A builder for a pool whose workers `make` commands (called once per worker started;
    /// their stdin and stdout are piped by the pool).
    pub fn builder(make: impl Fn() -> Command + Send + Sync + 'static) -> PoolBuilder {
        PoolBuilder {
            make: Box::new(make),
            size: 1,
            grace: crate::DEFAULT_GRACE,
            polite: StopSignal::Term,
            max_failures: DEFAULT_MAX_FAILURES,
        }
    }

    /// A request: `turn` runs on a pool thread with a leased [`Worker`] once one is free, and
    /// the handle resolves to what it returned. See the type's docs for what a cancel does.
    ///
    /// A closed pool gives a handle stopped with [`CancelReason::Shutdown`]; a pool that gave
    /// up, one stopped with the [`CancelReason::Custom`] that says why. A turn that panics
    /// gives `Err(NativeError::Panicked(..))` and its worker is replaced.
    ///
    /// [`NativeError`]: tethered::NativeError
    pub fn run<T, F>(&self, turn: F) -> AbortableNative<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Worker) -> T + Send + 'static,
    {
        match &self.shared.guarded.lock().lifecycle {
            Lifecycle::Open => {}
            Lifecycle::Broken(reason) => {
                return AbortableNative::cancelled(CancelReason::Custom(reason.clone()));
            }
            Lifecycle::Closed => return AbortableNative::cancelled(CancelReason::Shutdown),
        }
        let (job, completer) = Builder::new()
            .name("pool request")
            .child_of(&self.shared.stop.token())
            .external::<T>();
        let token = completer.token();
        let task = Task {
            abort: job.abort_handle(),
            run: Box::new(move |worker: &mut Worker| -> seat::Publish {
                let token = completer.token();
                if token.is_cancelled() {
                    // Cancelled on its way to the worker: the worker is untouched.
                    return Box::new(move || drop(completer));
                }
                worker.begin_turn(token.clone());
                let stop = worker.job.abort_handle();
                let link = token.on_cancel(move |reason| {
                    stop.cancel(reason.clone());
                });
                let outcome = tethered::catch_panic(|| turn(worker));
                drop(link);
                if token.is_cancelled() {
                    worker.cancelled_mid_turn();
                }
                match outcome {
                    Ok(value) => Box::new(move || completer.complete(value)),
                    Err(panic) => {
                        worker.retire_for(worker::Unfit::Broken(format!(
                            "its turn panicked: {}",
                            panic.message().unwrap_or("(no message)")
                        )));
                        Box::new(move || completer.panicked(panic))
                    }
                }
            }),
        };
        self.dispatch(task, &token);
        job
    }

    /// Hands `task` to an idle seat, or queues it with a link that takes it out on a cancel.
    fn dispatch(&self, task: Task, token: &tethered::CancelToken) {
        let id = {
            let mut state = self.shared.guarded.lock();
            if let Some(seat) = state.idle.pop() {
                drop(state);
                seat.give(task);
                return;
            }
            if state.lifecycle != Lifecycle::Open {
                drop(state);
                // Closed or broken meanwhile: dropped unrun, it finishes stopped.
                drop(task);
                return;
            }
            state.enqueue(task, false)
        };
        let shared = Arc::downgrade(&self.shared);
        // Runs at once if the request is cancelled already. Registered with no lock held.
        let link = token.on_cancel(move |_reason| {
            if let Some(shared) = shared.upgrade() {
                // Dropped here, with no lock held: the request finishes stopped.
                drop(shared.guarded.take_pending(id));
            }
        });
        let mut state = self.shared.guarded.lock();
        match state.pending.iter_mut().find(|pending| pending.id == id) {
            Some(pending) => pending.link = Some(link),
            None => {
                drop(state);
                drop(link);
            }
        }
    }

    /// The pool's counts now.
    pub fn stats(&self) -> PoolStats {
        let state = self.shared.guarded.lock();
        let counts = state.counts;
        PoolStats {
            size: self.shared.size,
            live: counts.live,
            busy: counts.busy,
            idle: state.idle.len(),
            waiting: state.pending.len(),
            served: counts.served,
            replaced: counts.replaced,
            cancelled_mid_turn: counts.cancelled_mid_turn,
            died: counts.died,
            retired: counts.retired,
            start_failures: counts.start_failures,
            broken: match &state.lifecycle {
                Lifecycle::Broken(reason) => Some(reason.to_string()),
                Lifecycle::Open | Lifecycle::Closed => None,
            },
        }
    }

    /// Closes the pool and waits up to `grace` (beyond the workers' own grace, which a stopped
    /// worker gets before SIGKILL) for every worker to be stopped and reaped: every request is
    /// cancelled with [`CancelReason::Shutdown`], waiting ones leave the queue, running ones'
    /// workers are stopped, idle ones too.
    pub fn shutdown_blocking(&self, grace: Duration) -> PoolShutdown {
        let started = Instant::now();
        let deadline = started.checked_add(grace);
        self.shared.close();
        let mut state = self.shared.guarded.lock();
        while state.seats > 0 {
            let left = deadline.map_or(Duration::MAX, |deadline| {
                deadline.saturating_duration_since(Instant::now())
            });
            if left.is_zero() {
                break;
            }
            state = self
                .shared
                .guarded
                .changed
                .wait_timeout(state, left.min(Duration::from_secs(3600)))
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .0;
        }
        PoolShutdown {
            still_running: state.counts.live,
            took: started.elapsed(),
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Stops every worker without waiting: the seats finish the stops on their threads.
        self.shared.close();
    }
}

impl fmt::Debug for Pool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pool")
            .field("stats", &self.stats())
            .finish()
    }
}

/// A [`Pool`]'s counts, from [`Pool::stats`]. A stopped worker is counted once its seat has
/// seen it reaped, just before its replacement starts: a request served by another worker
/// meanwhile may see the counts from before.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolStats {
    /// How many workers the pool keeps.
    pub size: usize,
    /// Worker processes alive now (idle, busy, or being stopped).
    pub live: usize,
    /// Workers running a turn now.
    pub busy: usize,
    /// Workers waiting for a request now.
    pub idle: usize,
    /// Requests waiting for a worker now.
    pub waiting: usize,
    /// Turns that returned with their worker fit to serve again.
    pub served: u64,
    /// Workers started to take a stopped one's place.
    pub replaced: u64,
    /// Workers stopped because their request was cancelled during its turn.
    pub cancelled_mid_turn: u64,
    /// Workers whose process ended by itself.
    pub died: u64,
    /// Workers retired because their protocol broke (or their turn panicked or retired them).
    pub retired: u64,
    /// Workers that failed to start, or ended before serving a request.
    pub start_failures: u64,
    /// Why the pool gave up, if it did.
    pub broken: Option<String>,
}

/// What [`Pool::shutdown_blocking`] found.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolShutdown {
    /// Workers still being stopped when the grace ran out (0 when all were reaped).
    pub still_running: usize,
    /// How long the shutdown took.
    pub took: Duration,
}
