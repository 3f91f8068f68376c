//! A seat: one thread of the pool that owns a worker process at a time, runs the turns lent to
//! it, and replaces its worker when it must.
//!
//! # Lifecycle of a seat's thread
//!
//! ```text
//!            started                  a task
//!  Starting ──────────▶ Idle ──────────────────────▶ Busy ──(fit)──▶ Idle
//!   ▲   │ failed:         │ left while idle,            │ unfit (cancelled mid-turn,
//!   │   │ back off,       │ not cleanly                 │ retired, died): stopped
//!   │   ▼ try again       ▼                             │
//!   └───────────── (worker stopped) ◀───────────────────┘
//!                         │ left while idle, cleanly (an idle timeout of its own)
//!                         ▼
//!                 Vacant (no worker) ──(a task)──▶ Starting, then Busy
//!  any state ──(the pool closed or broke)──▶ (worker stopped, thread ends)
//! ```
//!
//! Before every turn the seat looks whether its worker is still there ([`Worker::is_gone`]):
//! a request never goes to a worker that left while idle; it goes to a fresh one. A worker
//! that left cleanly while idle (an idle timeout of its own) is nobody's failure and is
//! replaced when a task comes, not at once, so the pool does not undo its idle timeout; any
//! other worker that went is replaced at once, so a crash loop shows (and breaks the pool)
//! even with no request waiting.

use std::sync::Arc;
use std::time::Duration;

use tethered::CancelReason;

use super::Shared;
use super::mailbox::{Seat, Slot};
use super::queue::{Lifecycle, Next as QueueNext};
use super::task::Task;
use super::worker::{Unfit, Worker};

/// How often an idle seat looks whether its worker left.
const IDLE_CHECK: Duration = Duration::from_millis(100);
/// The first wait after a worker failed; it doubles with each failure in a row.
const FIRST_BACKOFF: Duration = Duration::from_millis(10);
/// The longest wait between two starts.
const MAX_BACKOFF: Duration = Duration::from_secs(1);

/// Starts a seat's thread, with `first` as its first worker if given (else it starts one).
pub(super) fn start(
    shared: &Arc<Shared>,
    number: usize,
    first: Option<Worker>,
) -> std::io::Result<()> {
    let seat = Arc::new(Seat::new());
    let thread_shared = shared.clone();
    shared.queue.lock().seats += 1;
    let spawned = std::thread::Builder::new()
        .name(format!("tethered-pool-{number}"))
        .spawn(move || run(&thread_shared, &seat, first));
    if spawned.is_err() {
        shared.queue.lock().seats -= 1;
    }
    spawned.map(drop)
}

/// The seat's thread.
fn run(shared: &Shared, seat: &Arc<Seat<Task>>, first: Option<Worker>) {
    let mut worker = first;
    // A worker left cleanly while idle (an idle timeout of its own): the next one starts when
    // a task comes. Otherwise a missing worker is replaced at once (with the backoff of
    // `start_worker`), so a crash loop shows up, and breaks the pool, with no request waiting.
    let mut vacant = false;
    loop {
        if worker.is_none() && !vacant {
            worker = start_worker(shared);
            if worker.is_none() {
                if shared.queue.lock().lifecycle != Lifecycle::Open {
                    break;
                }
                continue;
            }
        }
        let task = match next_task(shared, seat, &mut worker) {
            Next::Run(task) => task,
            Next::Replace { clean } => {
                vacant = clean;
                continue;
            }
            Next::End => break,
        };
        vacant = false;
        // Never a request to a worker that is gone (see the module docs).
        if worker.as_ref().is_some_and(Worker::is_gone) {
            if let Some(gone) = worker.take() {
                stop(shared, gone, Ended::LeftWhileIdle);
            }
        }
        let mut fit = match worker.take() {
            Some(fit) => fit,
            None => match start_worker(shared) {
                Some(fresh) => fresh,
                None => {
                    // No worker to be had now: the request waits for one (at the front, with
                    // its link), or ends stopped if the pool closed or broke meanwhile.
                    hand_back(shared, task);
                    continue;
                }
            },
        };
        if serve(shared, &mut fit, task) {
            worker = Some(fit);
        } else {
            stop(shared, fit, Ended::AfterTurn);
        }
    }
    if let Some(worker) = worker {
        stop(shared, worker, Ended::Closing);
    }
    let mut state = shared.queue.lock();
    state.seats -= 1;
    drop(state);
    shared.queue.changed.notify_all();
}

/// What a seat does next.
enum Next {
    /// Runs this task.
    Run(Task),
    /// Its worker left while idle and was stopped: it replaces it at once, or (`clean`: an
    /// idle timeout of its own) when a task comes.
    Replace { clean: bool },
    /// The pool closed or broke.
    End,
}

/// The next task, or what else the seat must do. While the seat waits with a worker, it looks
/// every [`IDLE_CHECK`] whether the worker left, and stops and counts a worker that did.
fn next_task(shared: &Shared, seat: &Arc<Seat<Task>>, worker: &mut Option<Worker>) -> Next {
    match shared.queue.next(seat) {
        QueueNext::Task(task) => return Next::Run(task),
        QueueNext::Closed => return Next::End,
        QueueNext::Idle => {}
    }
    if let Some(idle) = worker {
        idle.set_idle(true);
    }
    // A task that comes just after the last one finds the thread spinning; later waits (one
    // per `IDLE_CHECK` while idle) sleep at once.
    let mut spin = tethered::__private::SPIN;
    loop {
        let slot = seat.wait(spin, IDLE_CHECK);
        spin = Duration::ZERO;
        match slot {
            Slot::Task(task) => {
                if let Some(idle) = worker {
                    idle.set_idle(false);
                }
                return Next::Run(task);
            }
            Slot::Close => return Next::End,
            Slot::Empty => {}
        }
        if !worker.as_ref().is_some_and(Worker::is_gone) {
            continue;
        }
        // Left while idle: off the idle list, stopped and counted; a task handed over
        // meanwhile is this seat's to run (with a fresh worker).
        let handed = shared.queue.leave_idle(seat);
        let clean = match worker.take() {
            Some(gone) => stop(shared, gone, Ended::LeftWhileIdle),
            None => true,
        };
        return match handed {
            Some(task) => Next::Run(task),
            None => Next::Replace { clean },
        };
    }
}

/// Gives a task the seat could not serve back to the pool: at the front of the queue, with a
/// link of its own (or to an idle seat). Dropped if the pool closed or broke: it then finishes
/// stopped (a broken pool's requests are cancelled with the reason first).
fn hand_back(shared: &Shared, task: Task) {
    let token = task.token.clone();
    if let Err(task) = shared.queue.dispatch(task, &token, true) {
        if let Lifecycle::Broken(reason) = &shared.queue.lock().lifecycle {
            task.abort.cancel_with_cause(
                CancelReason::Failed,
                tethered::Cause::msg(reason.to_string()),
            );
        }
        drop(task);
    }
}

/// Starts a worker, after a backoff if the last ones failed (10 ms, doubling with each failure
/// in a row, up to 1 s); `None` if it failed (counted) or the pool is closed or broke.
fn start_worker(shared: &Shared) -> Option<Worker> {
    let (id, failures) = {
        let mut state = shared.queue.lock();
        if state.lifecycle != Lifecycle::Open {
            return None;
        }
        state.next_worker += 1;
        (state.next_worker - 1, state.failures_in_a_row)
    };
    if failures > 0 {
        let backoff = FIRST_BACKOFF
            .saturating_mul(1 << (failures - 1).min(16))
            .min(MAX_BACKOFF);
        // Interrupted by the pool's close.
        if shared.stop.token().wait_timeout(backoff).is_some() {
            return None;
        }
    }
    match shared.spawn_worker(id) {
        Ok(worker) => {
            let mut state = shared.queue.lock();
            state.counts.live += 1;
            if id > shared.size.get() as u64 {
                state.counts.replaced += 1;
            }
            Some(worker)
        }
        Err(err) => {
            let why = tethered::__private::error_chain(&err);
            shared.failed(&format!("starting worker {id} failed: {why}"));
            None
        }
    }
}

/// Runs `task`'s turn on `worker`; `true` if the worker may serve again.
fn serve(shared: &Shared, worker: &mut Worker, task: Task) -> bool {
    shared.queue.lock().counts.busy += 1;
    let publish = (task.run)(worker);
    worker.end_turn();
    let fit = worker.unfit().is_none();
    {
        let mut state = shared.queue.lock();
        state.counts.busy -= 1;
        if fit {
            state.counts.served += 1;
            state.failures_in_a_row = 0;
            worker.served += 1;
        }
    }
    publish();
    fit
}

/// When a worker is stopped.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Ended {
    /// Its turn left it unfit.
    AfterTurn,
    /// Its process ended while it waited for a task.
    LeftWhileIdle,
    /// The pool closes or broke.
    Closing,
}

/// Stops `worker` (a cancel with `Shutdown` for a closing pool, `Requested` otherwise), waits
/// for its reap, and counts why it went. A worker that died before it served a turn is a
/// failure (a crash loop breaks the pool), unless it left while idle with a clean exit (its
/// own idle timeout): that is nobody's failure. Returns whether it was such a clean exit.
fn stop(shared: &Shared, worker: Worker, when: Ended) -> bool {
    let unfit = match when {
        Ended::LeftWhileIdle => Some(Unfit::Died),
        Ended::AfterTurn | Ended::Closing => worker.unfit(),
    };
    let served = worker.served;
    let job = worker.job;
    tethered::Tethered::cancel(
        &job,
        if when == Ended::Closing {
            CancelReason::Shutdown
        } else {
            CancelReason::Requested
        },
    );
    // Within the worker's grace, then SIGKILL: the supervisor reaps it.
    let output = job.join_blocking();
    let clean_exit = match &output {
        Ok(output) => output.success(),
        Err(err) => err.returned().is_some_and(crate::ProcessOutput::success),
    };
    let failed = {
        let mut state = shared.queue.lock();
        state.counts.live -= 1;
        match &unfit {
            Some(Unfit::Cancelled) => state.counts.cancelled_mid_turn += 1,
            Some(Unfit::Died) if when == Ended::LeftWhileIdle && clean_exit => {
                state.counts.idle_exits += 1;
            }
            Some(Unfit::Died) => state.counts.died += 1,
            Some(Unfit::Broken(_)) => state.counts.retired += 1,
            None => {}
        }
        drop(state);
        shared.queue.changed.notify_all();
        served == 0
            && when != Ended::Closing
            && match &unfit {
                Some(Unfit::Died) => !(when == Ended::LeftWhileIdle && clean_exit),
                Some(Unfit::Broken(_)) => true,
                _ => false,
            }
    };
    if failed {
        let why = unfit.map(|unfit| unfit.to_string()).unwrap_or_default();
        shared.failed(&format!("a worker ended before serving a request: {why}"));
    }
    when == Ended::LeftWhileIdle && clean_exit
}
