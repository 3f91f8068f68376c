//! [`Pool`]: long-lived worker processes for request/response protocols over stdio, each
//! request tethered to the future that awaits it.
//!
//! # Files
//!
//! This file holds the pool's API; `queue.rs` its shared state (waiting requests, idle seats,
//! counts), `mailbox.rs` a seat's mailbox, `seat.rs` the threads that own the workers,
//! `task.rs` a request's turn, `worker.rs` the worker a turn is lent, `shutdown.rs` the
//! shutdown as a future.

pub(crate) mod mailbox;
pub(crate) mod queue;
mod seat;
mod shutdown;
mod task;
mod worker;

pub use worker::Worker;

use std::fmt;
use std::io;
use std::num::{NonZeroU32, NonZeroUsize};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tethered::{
    AbortableNative, CancelReason, CancelSource, Cause, Completer, JobOptions, ShutdownReport,
    SpawnError, Straggler, Tethered,
};

use crate::builder::Process;
use crate::signal::StopSignal;
use queue::{Lifecycle, Queue};
use task::{Publish, Task};

/// How many workers in a row may fail to start (or die before serving a request) before the
/// pool gives up, unless [`PoolBuilder::max_failures`] says otherwise.
pub const DEFAULT_MAX_FAILURES: NonZeroU32 = NonZeroU32::new(5).expect("5 is not zero");

/// What the seats share.
struct Shared {
    make: Box<dyn Fn() -> Command + Send + Sync>,
    size: NonZeroUsize,
    kill_after: Duration,
    polite: StopSignal,
    max_failures: NonZeroU32,
    /// Every request is a child of its token; cancelled with `Shutdown` when the pool closes.
    stop: CancelSource,
    queue: Arc<Queue<Task>>,
    /// The live workers' job handles' ids and names, for a shutdown's report.
    workers: Mutex<Vec<(tethered::JobId, String, tethered::AbortHandle)>>,
}

impl Shared {
    fn spawn_worker(&self, id: u64) -> Result<Worker, SpawnError> {
        // The factory is user code: a panic in it is a failed start, not a dead seat.
        let mut command = tethered::__private::catch_panic(|| (self.make)()).map_err(|panic| {
            SpawnError::Start(io::Error::other(format!(
                "the pool's command factory panicked: {panic}"
            )))
        })?;
        command.stdin(Stdio::piped()).stdout(Stdio::piped());
        let name = format!("pool worker {id}");
        let job = Process::new(command)
            .kill_after(self.kill_after)
            .polite_signal(self.polite)
            .capture_stdout(false)
            .spawn_with(JobOptions::new().name(name.clone()))?;
        {
            let mut workers = self.workers.lock().unwrap_or_else(|e| e.into_inner());
            workers.retain(|(_, _, abort)| !abort.is_finished());
            workers.push((job.id(), name, job.abort_handle()));
        }
        Worker::new(id, job).map_err(SpawnError::Start)
    }

    /// A worker failed to start (or died before serving a request): after `max_failures` in
    /// a row, the pool breaks, and every waiting request is stopped with the reason.
    fn failed(&self, why: &str) {
        let reason: Arc<str> = {
            let mut state = self.queue.lock();
            state.counts.start_failures += 1;
            state.failures_in_a_row += 1;
            if state.failures_in_a_row < self.max_failures.get()
                || state.lifecycle != Lifecycle::Open
            {
                return;
            }
            format!(
                "the worker pool gave up after {} workers in a row failed; the last: {why}",
                state.failures_in_a_row
            )
            .into()
        };
        let waiting = self.queue.end(Lifecycle::Broken(reason.clone()));
        let cause = Cause::msg(reason.to_string());
        for (task, link) in waiting {
            drop(link);
            task.abort
                .cancel_with_cause(CancelReason::Failed, cause.clone());
            // Dropping the unrun task finishes its request with that reason.
            drop(task);
        }
    }

    /// Closes the pool: no new request, every request cancelled with `Shutdown` (a running
    /// turn's worker is stopped), every seat told to stop its worker and end.
    fn close(&self) {
        // Running requests stop their workers through their links; waiting ones are dropped
        // below, after their tokens heard the reason.
        self.stop.cancel(CancelReason::Shutdown);
        let waiting = self.queue.end(Lifecycle::Closed);
        drop(waiting);
    }
}

/// Long-lived worker processes for a request/response protocol over their stdin and stdout,
/// each request tethered to the future that awaits it.
///
/// A request ([`run`](Self::run)) leases a worker, waiting for one while all are busy, and
/// its turn talks to the worker through a [`Worker`] on a thread of the pool. The request is
/// an [`AbortableNative`]: await it, time it out, cancel it, give it a deadline. If it is
/// cancelled while it waits, it leaves the queue; if it is cancelled during its turn (its
/// future dropped, a timeout, a shutdown), the worker's process group is stopped at once (the
/// polite signal, SIGKILL after [`kill_after`](PoolBuilder::kill_after), reaped by the
/// crate's supervisor), the turn's blocking I/O ends with an error, and a fresh worker takes
/// the worker's place. A worker that dies, or whose protocol broke (an I/O error through
/// [`Worker::read_line`] or [`Worker::send_line`], [`Worker::retire`]), is replaced too; one
/// whose turn returns healthy serves the next request.
///
/// No request goes to a worker that is gone: before every turn the pool looks whether the
/// worker left while it waited (an idle timeout of its own); such a worker is replaced when
/// the next request comes (not at once, so its idle timeout is not undone), and its exit is
/// nobody's failure.
///
/// A worker that fails to start, or dies before serving a request (other than a clean exit
/// while idle), is retried after a backoff (10 ms, doubling to 1 s); after
/// [`DEFAULT_MAX_FAILURES`] in a row the pool gives up: every waiting and later request is
/// stopped with [`CancelReason::Failed`] and a cause that names the last failure, and
/// [`PoolStats::broken`] says so.
///
/// Each worker has a thread of the pool (`size` threads in all) that runs its turns, so a turn
/// may block on the pipes; the workers' processes are watched by the crate's one supervisor.
/// In [`tethered::stats()`] an idle worker counts as `idle`, a worker in a turn as `running`.
/// A pool is [`Shutdown`](tethered::Shutdown): a `tethered_server::Server` stops it within its
/// one deadline.
///
/// ```
/// use std::num::NonZeroUsize;
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
/// .size(NonZeroUsize::new(2).unwrap())
/// .build()?;
/// let request = pool.run(|worker| {
///     worker.send_line("hello")?;
///     worker.read_line()
/// });
/// assert_eq!(request.join_blocking()??, "HELLO");
/// let report = pool.shutdown_blocking(Duration::from_secs(10));
/// assert!(report.is_clean(), "{report}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Pool {
    shared: Arc<Shared>,
}

/// Builds a [`Pool`]: made by [`Pool::builder`].
#[must_use = "a builder does nothing until `build` is called"]
pub struct PoolBuilder {
    make: Box<dyn Fn() -> Command + Send + Sync>,
    size: NonZeroUsize,
    kill_after: Duration,
    polite: StopSignal,
    max_failures: NonZeroU32,
}

impl PoolBuilder {
    /// How many workers the pool keeps (default 1).
    pub fn size(mut self, size: NonZeroUsize) -> Self {
        self.size = size;
        self
    }

    /// How long a stopped worker gets between the polite signal and SIGKILL (default
    /// [`DEFAULT_KILL_AFTER`](crate::DEFAULT_KILL_AFTER)), as [`Process::kill_after`].
    pub fn kill_after(mut self, kill_after: Duration) -> Self {
        self.kill_after = kill_after;
        self
    }

    /// The signal that asks a stopped worker to stop (default [`StopSignal::Term`]).
    pub fn polite_signal(mut self, signal: StopSignal) -> Self {
        self.polite = signal;
        self
    }

    /// How many workers in a row may fail before the pool gives up (default
    /// [`DEFAULT_MAX_FAILURES`]).
    pub fn max_failures(mut self, failures: NonZeroU32) -> Self {
        self.max_failures = failures;
        self
    }

    /// Starts the pool: its threads, and a worker for each. The workers start on the pool's
    /// threads; the first one is started here, so a command that cannot start at all (a missing
    /// program) is the error.
    ///
    /// # Errors
    ///
    /// The first worker's start error ([`SpawnError::Start`]: a missing program, a command
    /// factory that panicked); the OS's refusal of a thread ([`SpawnError::Thread`]).
    pub fn build(self) -> Result<Pool, SpawnError> {
        let shared = Arc::new(Shared {
            make: self.make,
            size: self.size,
            kill_after: self.kill_after,
            polite: self.polite,
            max_failures: self.max_failures,
            stop: CancelSource::new(),
            queue: Queue::new(),
            workers: Mutex::new(Vec::new()),
        });
        // The first start says whether the command starts at all; the first seat keeps it.
        let mut first = Some(shared.spawn_worker(1)?);
        {
            let mut state = shared.queue.lock();
            state.counts.live += 1;
            state.next_worker = 2;
        }
        let pool = Pool { shared };
        for number in 1..=pool.shared.size.get() {
            seat::start(&pool.shared, number, first.take()).map_err(SpawnError::Thread)?;
        }
        Ok(pool)
    }
}

impl fmt::Debug for PoolBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PoolBuilder")
            .field("size", &self.size)
            .field("kill_after", &self.kill_after)
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
            size: NonZeroUsize::MIN,
            kill_after: crate::DEFAULT_KILL_AFTER,
            polite: StopSignal::Term,
            max_failures: DEFAULT_MAX_FAILURES,
        }
    }

    /// A request: `turn` runs on a pool thread with a leased [`Worker`] once one is free, and
    /// the handle resolves to what it returned. See the type's docs for what a cancel does;
    /// [`run_with`](Self::run_with) gives it a name, a deadline, a grace or a request's token.
    ///
    /// A closed pool gives a handle stopped with [`CancelReason::Shutdown`]; a pool that gave
    /// up, one stopped with [`CancelReason::Failed`] and a cause that says why. A turn that
    /// panics gives `Err(NativeError::Panicked(..))` and its worker is replaced.
    ///
    /// [`NativeError`]: tethered::NativeError
    pub fn run<T, F>(&self, turn: F) -> AbortableNative<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Worker) -> T + Send + 'static,
    {
        match self.run_with(JobOptions::new(), turn) {
            Ok(job) => job,
            // Only a deadline needs the timer, and `run` gives none.
            Err(err) => unreachable!("a request without a deadline starts: {err}"),
        }
    }

    /// [`run`](Self::run) with [`JobOptions`]: a name (`"pool request"` unless given), a
    /// deadline, a grace, the tokens it is a child of (a request's, so that a client's
    /// disconnect stops the worker's turn), and a panic policy. A pool turn runs on the pool's
    /// own threads, so the options take no placement.
    ///
    /// # Errors
    ///
    /// [`SpawnError::Timer`] if the options' deadline could not be armed.
    ///
    /// ```
    /// use std::process::Command;
    /// use std::time::Duration;
    /// use tethered::{CancelReason, CancelSource, JobOptions};
    /// use tethered_process::Pool;
    ///
    /// let pool = Pool::builder(|| {
    ///     let mut command = Command::new("python3");
    ///     command.args(["-u", "-c", "import sys, time\nfor line in sys.stdin: time.sleep(60)"]);
    ///     command
    /// })
    /// .build()?;
    /// let http_request = CancelSource::new();
    /// let request = pool.run_with(JobOptions::new().child_of(&http_request.token()), |worker| {
    ///     worker.send_line("slow")?;
    ///     worker.read_line() // blocks until the worker answers, or is stopped
    /// })?;
    /// http_request.cancel(CancelReason::Dropped); // the client went away: the worker is stopped
    /// let stopped = request.join_blocking().unwrap_err();
    /// assert_eq!(stopped.cancel_reason(), Some(CancelReason::Dropped));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn run_with<T, F>(
        &self,
        options: JobOptions,
        turn: F,
    ) -> Result<AbortableNative<T>, SpawnError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Worker) -> T + Send + 'static,
    {
        match &self.shared.queue.lock().lifecycle {
            Lifecycle::Open => {}
            Lifecycle::Broken(reason) => {
                return Ok(AbortableNative::stopped_with_cause(
                    CancelReason::Failed,
                    Cause::msg(reason.to_string()),
                ));
            }
            Lifecycle::Closed => return Ok(AbortableNative::stopped(CancelReason::Shutdown)),
        }
        let options = options
            .named_or("pool request")
            .child_of(&self.shared.stop.token());
        // An unplaced external job's start runs here, at once: the completer comes out of it.
        let slot = Arc::new(Mutex::new(None));
        let job = tethered::spawn_external(options, {
            let slot = slot.clone();
            move |completer: Completer<T>| {
                *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(completer);
            }
        })?;
        let Some(completer) = slot.lock().unwrap_or_else(|e| e.into_inner()).take() else {
            // Cancelled before it began (a zero timeout, a past deadline, a cancelled parent):
            // the job is stopped already, and no worker is touched.
            return Ok(job);
        };
        let token = completer.token().clone();
        let task = Task {
            abort: job.abort_handle(),
            token: token.clone(),
            run: Box::new(move |worker: &mut Worker| -> Publish {
                turn_of(worker, completer, turn)
            }),
        };
        if let Err(task) = self.shared.queue.dispatch(task, &token, false) {
            // Closed or broken meanwhile: dropped unrun, it finishes stopped.
            drop(task);
        }
        Ok(job)
    }

    /// The pool's counts now.
    pub fn stats(&self) -> PoolStats {
        let state = self.shared.queue.lock();
        let counts = state.counts;
        PoolStats {
            size: self.shared.size.get(),
            live: counts.live,
            busy: counts.busy,
            idle: state.idle_seats(),
            waiting: state.waiting(),
            served: counts.served,
            replaced: counts.replaced,
            cancelled_mid_turn: counts.cancelled_mid_turn,
            died: counts.died,
            idle_exits: counts.idle_exits,
            retired: counts.retired,
            start_failures: counts.start_failures,
            broken: match &state.lifecycle {
                Lifecycle::Broken(reason) => Some(reason.to_string()),
                Lifecycle::Open | Lifecycle::Closed => None,
            },
        }
    }

    /// Closes the pool and waits up to `grace` (beyond the workers' own
    /// [`kill_after`](PoolBuilder::kill_after), which a stopped worker gets before SIGKILL) for
    /// every worker to be stopped and reaped: every request is cancelled with
    /// [`CancelReason::Shutdown`], waiting ones leave the queue, running ones' workers are
    /// stopped, idle ones too. The report counts the workers that were alive and names those
    /// still alive at the deadline.
    pub fn shutdown_blocking(&self, grace: Duration) -> ShutdownReport {
        let started = Instant::now();
        let live = self.shared.queue.lock().counts.live;
        self.shared.close();
        wait_for_seats(&self.shared, started, grace);
        report(&self.shared, started, grace, live)
    }

    /// [`shutdown_blocking`](Self::shutdown_blocking) as a future: the pool closes at once
    /// (every request cancelled, every worker told to stop) and the future resolves to the
    /// report once every worker is reaped or `grace` has passed. The wait runs on a thread of
    /// its own, so any executor can await it.
    pub fn shutdown(&self, grace: Duration) -> tethered::ShutdownFuture {
        let started = Instant::now();
        let live = self.shared.queue.lock().counts.live;
        self.shared.close();
        let shared = self.shared.clone();
        Box::pin(shutdown::Waiting::start(move || {
            wait_for_seats(&shared, started, grace);
            report(&shared, started, grace, live)
        }))
    }
}

/// A request's turn on `worker`: skipped if it was cancelled on its way; otherwise the worker
/// is stopped if the request is cancelled during the turn, and a panic retires the worker.
fn turn_of<T, F>(worker: &mut Worker, completer: Completer<T>, turn: F) -> Publish
where
    T: Send + 'static,
    F: FnOnce(&mut Worker) -> T + Send + 'static,
{
    let token = completer.token().clone();
    if token.is_cancelled() {
        // Cancelled on its way to the worker: the worker is untouched.
        return Box::new(move || drop(completer));
    }
    worker.begin_turn(token.clone());
    let stop = worker.job.abort_handle();
    let link = token.on_cancel(move |reason| {
        stop.cancel(reason);
    });
    // Named after the request while the turn runs (`top -H` shows which request the seat's
    // thread serves), as any job's thread is.
    let outcome = completer.run(|| turn(worker));
    drop(link);
    if token.is_cancelled() {
        worker.cancelled_mid_turn();
    }
    match outcome {
        Ok(value) => Box::new(move || completer.complete(value)),
        Err(panic) => {
            worker.retire_for(worker::Unfit::Broken(format!("its turn panicked: {panic}")));
            Box::new(move || completer.panicked(panic))
        }
    }
}

/// Waits until every seat's thread ended (its worker stopped and reaped) or `grace` passed.
fn wait_for_seats(shared: &Shared, started: Instant, grace: Duration) {
    let deadline = started.checked_add(grace);
    let mut state = shared.queue.lock();
    while state.seats > 0 {
        let left = deadline.map_or(Duration::from_secs(3600), |deadline| {
            deadline.saturating_duration_since(Instant::now())
        });
        if left.is_zero() {
            break;
        }
        state = crate::sync::wait_timeout(
            &shared.queue.changed,
            state,
            left.min(Duration::from_secs(3600)),
        );
    }
}

/// The shutdown's report: `live` workers were stopped; those not reaped yet are stragglers.
fn report(shared: &Shared, started: Instant, grace: Duration, live: usize) -> ShutdownReport {
    let workers = shared.workers.lock().unwrap_or_else(|e| e.into_inner());
    let mut report = ShutdownReport::new(grace, started.elapsed());
    report.cancelled = live;
    report.stragglers = workers
        .iter()
        .filter(|(_, _, abort)| !abort.is_finished())
        .map(|(id, name, _)| Straggler::new(*id, Some(Arc::from(name.as_str()))))
        .collect();
    report.returned = live.saturating_sub(report.stragglers.len());
    report
}

/// [`Pool::shutdown`]: how a server shuts a pool down with its other parts.
impl tethered::Shutdown for Pool {
    fn shutdown(&self, grace: Duration) -> tethered::ShutdownFuture {
        Pool::shutdown(self, grace)
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
/// seen it reaped: a request served by another worker meanwhile may see the counts from
/// before.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolStats {
    /// How many workers the pool keeps.
    pub size: usize,
    /// Worker processes alive now (idle, busy, or being stopped).
    pub live: usize,
    /// Workers running a turn now.
    pub busy: usize,
    /// Seats waiting for a request now (with a worker, or none after it left while idle).
    pub idle: usize,
    /// Requests waiting for a worker now.
    pub waiting: usize,
    /// Turns that returned with their worker fit to serve again.
    pub served: u64,
    /// Workers started to take a stopped one's place.
    pub replaced: u64,
    /// Workers stopped because their request was cancelled during its turn.
    pub cancelled_mid_turn: u64,
    /// Workers whose process ended by itself, not cleanly or during a turn.
    pub died: u64,
    /// Workers that exited cleanly while idle (an idle timeout of their own): replaced when a
    /// request comes, and nobody's failure.
    pub idle_exits: u64,
    /// Workers retired because their protocol broke (or their turn panicked or retired them).
    pub retired: u64,
    /// Workers that failed to start, or died before serving a request.
    pub start_failures: u64,
    /// Why the pool gave up, if it did.
    pub broken: Option<String>,
}
