//! The state of one Node-API environment (the main thread's, or a `worker_threads` Worker's),
//! kept on its JavaScript thread: the token every job of the environment descends from, the
//! count of its running closures, the way outcomes reach its thread (one threadsafe function
//! for all its jobs), and the count of its pending promises, which keeps its event loop alive.
//! (The abort listeners on its signals are `listeners`'.)
//!
//! # Lifecycle
//!
//! ```text
//!  (none) ──first job──▶ Open ──teardown hook, or the process's `exit` event──▶ Closed
//! ```
//!
//! - Open: jobs start; the first one registered an environment cleanup hook and a listener on
//!   `process`'s `exit` event.
//! - Closed: the root token is cancelled with [`CancelReason::Shutdown`] (so every running job
//!   is), the closing thread has waited up to [`TEARDOWN_GRACE`] for those jobs to return, and
//!   no job starts. The cleanup hook also forgets the state, so an environment made later on
//!   the same thread starts afresh.
//!
//! Everything here runs on the environment's own thread: the state is a thread-local, and
//! `napi` values never leave it. What other threads need (the root token, the running count,
//! the delivery) is shared through `Arc`s.
//!
//! # Keeping the event loop alive
//!
//! The delivery's threadsafe function is weak: it alone would let the process end under a
//! pending promise. While a promise is pending, the environment references a second, strong
//! one (made with the environment's first pending promise; referenced when the count of
//! pending promises goes from zero to one, unreferenced when it goes back), as a pending
//! `fetch` keeps its socket. A closure whose promise settled (its signal aborted)
//! keeps nothing alive: the process may end, and its teardown waits up to [`TEARDOWN_GRACE`]
//! for such closures.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use napi::bindgen_prelude::{
    FnArgs, Function, FunctionRef, JsObjectValue, JsValue, Object, Unknown,
};
use napi::threadsafe_function::{ThreadsafeCallContext, ThreadsafeFunctionCallMode};
use napi::{Env, Status};
use tethered::{AbortHandle, CancelReason, CancelSource, CancelToken};

use crate::abort;
use crate::helpers;
use crate::sync::{self, Condvar, Mutex};

/// How long an environment's teardown waits for the jobs it cancelled to return: long enough
/// for a closure that checks its token to notice and clean up, short enough not to hold up a
/// process exit or a Worker's `terminate()` behind one that never checks.
pub(crate) const TEARDOWN_GRACE: Duration = Duration::from_millis(100);

thread_local! {
    /// The environments of this thread (almost always one), by their `napi_env` address.
    static ENVIRONMENTS: RefCell<HashMap<usize, State>> = RefCell::new(HashMap::new());
}

struct State {
    root: CancelSource,
    running: Arc<Running>,
    closed: bool,
    /// The listener on `process`'s `exit` event is in.
    exit_heard: bool,
    next_job: u64,
    delivery: Arc<Delivery>,
    /// A function that does nothing, which the keep-alive threadsafe function calls.
    noop: FunctionRef<(), ()>,
    /// Promises of this environment still pending.
    pending: usize,
    /// A strong threadsafe function, made with the first pending promise and referenced while
    /// `pending` is above zero (unreferenced, it keeps nothing alive).
    keep_alive: Option<KeepAlive>,
}

/// The keep-alive threadsafe function: `hold(env, true)` references it (the event loop stays
/// alive), `hold(env, false)` unreferences it. Made once per environment: making and releasing
/// one each time the count of pending promises leaves and returns to zero (as a caller that
/// awaits one call after another does) cost a third of such a call.
struct KeepAlive {
    hold: Hold,
}

/// References (`true`) or unreferences (`false`) one threadsafe function.
type Hold = Box<dyn FnMut(&Env, bool) -> napi::Result<()> + Send>;

/// What a job takes from its environment.
pub(crate) struct Entry {
    pub(crate) id: u64,
    pub(crate) root: CancelToken,
    pub(crate) running: Arc<Running>,
    pub(crate) delivery: Arc<Delivery>,
}

/// Work for the environment's JavaScript thread.
pub(crate) type Task = Box<dyn FnOnce(&Env) + Send>;

/// Runs [`Task`]s on the environment's JavaScript thread, from any thread.
pub(crate) struct Delivery {
    send: Box<dyn Fn(Task) -> bool + Send + Sync>,
}

impl Delivery {
    /// Queues `task` for the JavaScript thread; dropped (contained) if the environment is gone.
    pub(crate) fn send(&self, task: Task) {
        // A refused task was dropped by napi-rs: whatever it held was contained by its owner.
        let _delivered = (self.send)(task);
    }
}

fn key(env: &Env) -> usize {
    env.raw() as usize
}

/// Registers a new job of `env`, opening the environment's state on its first job: `None` when
/// the environment is closing (its teardown or the process's `exit` event ran).
///
/// # Errors
///
/// The hooks of a first job could not be registered.
pub(crate) fn enter(env: &Env) -> napi::Result<Option<Entry>> {
    let key = key(env);
    let (opened, exit_heard) = ENVIRONMENTS.with_borrow(|all| {
        all.get(&key)
            .map_or((false, false), |state| (true, state.exit_heard))
    });
    if !opened {
        open(env, key)?;
    }
    if !exit_heard {
        // Retried until it took: a first attempt may fail (a `process.on` the caller replaced
        // that throws), and the jobs must still stop at `process.exit()`.
        listen_for_exit(env, key)?;
    }
    Ok(ENVIRONMENTS.with_borrow_mut(|all| {
        let state = all.get_mut(&key)?;
        if state.closed {
            return None;
        }
        state.next_job += 1;
        Some(Entry {
            id: state.next_job,
            root: state.root.token(),
            running: state.running.clone(),
            delivery: state.delivery.clone(),
        })
    }))
}

/// A promise of `env` is pending: the first one keeps the event loop alive.
pub(crate) fn pending(env: &Env) -> napi::Result<()> {
    let key = key(env);
    let first = ENVIRONMENTS.with_borrow_mut(|all| {
        all.get_mut(&key).is_some_and(|state| {
            state.pending += 1;
            state.pending == 1
        })
    });
    if first {
        hold(env, key, true)?;
    }
    Ok(())
}

/// A promise of `env` settled: the last one lets the event loop end.
pub(crate) fn settled(env: &Env) {
    let key = key(env);
    let last = ENVIRONMENTS.with_borrow_mut(|all| {
        all.get_mut(&key).is_some_and(|state| {
            state.pending = state.pending.saturating_sub(1);
            state.pending == 0
        })
    });
    if last {
        // Unreferencing cannot fail but on a closing environment, whose loop ends anyway.
        let _ = hold(env, key, false);
    }
}

/// References (`alive`) or unreferences the environment's keep-alive threadsafe function,
/// making it on the first reference. Outside the thread-local's borrow: both call Node-API.
fn hold(env: &Env, key: usize, alive: bool) -> napi::Result<()> {
    let taken = ENVIRONMENTS.with_borrow_mut(|all| all.get_mut(&key).map(|s| s.keep_alive.take()));
    let Some(taken) = taken else {
        return Ok(());
    };
    let mut keep_alive = match taken {
        Some(keep_alive) => keep_alive,
        None if alive => {
            let noop = ENVIRONMENTS
                .with_borrow(|all| all.get(&key).map(|state| state.noop.borrow_back(env)));
            let Some(noop) = noop else {
                return Ok(());
            };
            // Made referenced: that is the hold asked for.
            let mut strong = noop?
                .build_threadsafe_function::<()>()
                .build_callback(|_: ThreadsafeCallContext<()>| Ok(()))?;
            let keep_alive = KeepAlive {
                #[expect(
                    deprecated,
                    reason = "napi-rs deprecates refer/unref in favour of clone, which counts \
                              references to the function; these toggle whether it keeps the \
                              event loop alive (napi_ref/unref_threadsafe_function)"
                )]
                hold: Box::new(move |env: &Env, alive: bool| {
                    if alive {
                        strong.refer(env)
                    } else {
                        strong.unref(env)
                    }
                }),
            };
            ENVIRONMENTS.with_borrow_mut(|all| {
                if let Some(state) = all.get_mut(&key) {
                    state.keep_alive = Some(keep_alive);
                }
            });
            return Ok(());
        }
        None => return Ok(()),
    };
    let held = (keep_alive.hold)(env, alive);
    ENVIRONMENTS.with_borrow_mut(|all| {
        if let Some(state) = all.get_mut(&key) {
            state.keep_alive = Some(keep_alive);
        }
    });
    held
}

/// The environment's first job: its cleanup hook, then its state (only once the hook is in).
fn open(env: &Env, key: usize) -> napi::Result<()> {
    // Before any promise of this environment exists: cleanup hooks run in reverse order of
    // registration, so this one runs after napi-rs's own hooks that retire each pending
    // promise's threadsafe function, and cancelling the jobs here settles nothing.
    env.add_env_cleanup_hook(key, |key| {
        close(key);
        let gone = ENVIRONMENTS.with_borrow_mut(|all| all.remove(&key));
        drop(gone);
        abort::forget(key);
        helpers::forget(key);
    })?;
    let noop = env.create_function_from_closure::<(), (), _>("tetheredNapiDeliver", |_| Ok(()))?;
    // Weak: the deliveries alone never keep the event loop alive (see the module's docs).
    let weak = noop
        .build_threadsafe_function::<Task>()
        .weak::<true>()
        .build_callback(|ctx: ThreadsafeCallContext<Task>| {
            (ctx.value)(&ctx.env);
            Ok(())
        })?;
    let delivery = Arc::new(Delivery {
        send: Box::new(move |task| {
            weak.call(task, ThreadsafeFunctionCallMode::NonBlocking) == Status::Ok
        }),
    });
    let noop = noop.create_ref()?;
    ENVIRONMENTS.with_borrow_mut(|all| {
        all.insert(
            key,
            State {
                root: CancelSource::new(),
                running: Arc::new(Running::default()),
                closed: false,
                exit_heard: false,
                next_job: 0,
                delivery,
                noop,
                pending: 0,
                keep_alive: None,
            },
        )
    });
    Ok(())
}

/// `process.exit()` ends the process without tearing the environment down (no cleanup hook
/// runs), so the process's `exit` event stops the jobs too.
fn listen_for_exit(env: &Env, key: usize) -> napi::Result<()> {
    let on_exit = env.create_function_from_closure::<(), (), _>("tetheredNapiExit", move |_| {
        close(key);
        Ok(())
    })?;
    let process: Object<'_> = env.get_global()?.get_named_property("process")?;
    let on: Function<'_, FnArgs<(&str, Unknown<'_>)>, Unknown<'_>> =
        process.get_named_property("on")?;
    on.apply(process, FnArgs::from(("exit", on_exit.to_unknown())))?;
    ENVIRONMENTS.with_borrow_mut(|all| {
        if let Some(state) = all.get_mut(&key) {
            state.exit_heard = true;
        }
    });
    Ok(())
}

/// Closes the environment: cancels its jobs with `Shutdown` and waits (a little) for them.
fn close(key: usize) {
    let taken = ENVIRONMENTS.with_borrow_mut(|all| {
        let state = all.get_mut(&key)?;
        if state.closed {
            return None;
        }
        state.closed = true;
        Some((state.root.clone(), state.running.clone()))
    });
    let Some((root, running)) = taken else {
        return;
    };
    // Outside the thread-local's borrow: cancelling runs the jobs' callbacks.
    root.cancel(CancelReason::Shutdown);
    running.wait_idle(TEARDOWN_GRACE);
}

/// How many closures of an environment's jobs run now, for its teardown to wait on, and the
/// jobs themselves: a closure counts out of `tethered::stats()` a moment after it returns, and
/// the teardown waits for that too, so that a `Worker`'s `terminate()` never resolves while a
/// closure that returned still counts as running.
#[derive(Default)]
pub(crate) struct Running {
    count: Mutex<usize>,
    idle: Condvar,
    /// The environment's jobs not yet seen finished (pruned as new ones come).
    jobs: Mutex<Vec<AbortHandle>>,
}

/// Counts one closure as running until dropped (after the closure returned or panicked).
pub(crate) struct RunningGuard<'a>(&'a Running);

impl Drop for RunningGuard<'_> {
    fn drop(&mut self) {
        let mut count = sync::lock(&self.0.count);
        *count = count.saturating_sub(1);
        if *count == 0 {
            self.0.idle.notify_all();
        }
    }
}

impl Running {
    /// A closure starts.
    pub(crate) fn enter(&self) -> RunningGuard<'_> {
        *sync::lock(&self.count) += 1;
        RunningGuard(self)
    }

    /// A job of the environment, for the teardown to wait on until it is finished.
    pub(crate) fn track(&self, job: AbortHandle) {
        let mut jobs = sync::lock(&self.jobs);
        // Amortised: the finished ones go whenever the list has doubled.
        if jobs.len() >= 64 && jobs.len().is_power_of_two() {
            jobs.retain(|job| !job.is_finished());
        }
        jobs.push(job);
    }

    /// Waits until no closure runs and every job that ran one is finished (counted out of
    /// `stats()`), or `grace` has passed.
    fn wait_idle(&self, grace: Duration) {
        let until = Instant::now() + grace;
        let mut count = sync::lock(&self.count);
        while *count > 0 {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return;
            }
            count = self
                .idle
                .wait_timeout(count, left)
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .0;
        }
        drop(count);
        // Every closure returned: its job finishes within moments (the core counts it out,
        // then seals its token), unless it never started and is being skipped.
        let jobs = std::mem::take(&mut *sync::lock(&self.jobs));
        for job in jobs {
            while !job.is_finished() && Instant::now() < until {
                std::thread::yield_now();
            }
        }
    }
}
