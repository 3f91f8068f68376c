//! The state of one Node-API environment (the main thread's, or a `worker_threads` Worker's),
//! kept on its JavaScript thread: the token every job of the environment descends from, and
//! the count of its running jobs. (The abort listeners on its signals are `listeners`'.)
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
//! `napi` values never leave it. What other threads need (the root token, the running count)
//! is shared through `Arc`s.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use napi::bindgen_prelude::{FnArgs, Function, JsObjectValue, JsValue, Object, Unknown};
use napi::{Env, Error, Status};
use tethered::{CancelReason, CancelSource, CancelToken};

use crate::listeners;
use crate::signal;
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
}

/// What a job takes from its environment.
pub(crate) struct Entry {
    pub(crate) id: u64,
    pub(crate) root: CancelToken,
    pub(crate) running: Arc<Running>,
}

fn key(env: &Env) -> usize {
    env.raw() as usize
}

/// Registers a new job of `env`, opening the environment's state on its first job.
///
/// # Errors
///
/// When the environment is closing (its teardown or the process's `exit` event ran), or the
/// hooks of a first job could not be registered.
pub(crate) fn enter(env: &Env) -> napi::Result<Entry> {
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
    ENVIRONMENTS.with_borrow_mut(|all| {
        let state = all
            .get_mut(&key)
            .expect("the environment's state was opened above");
        if state.closed {
            return Err(Error::new(
                Status::Closing,
                "the JavaScript environment is shutting down (the process is exiting or the \
                 Worker is terminating): no native job starts now",
            ));
        }
        state.next_job += 1;
        Ok(Entry {
            id: state.next_job,
            root: state.root.token(),
            running: state.running.clone(),
        })
    })
}

/// The environment's first job: its cleanup hook, then its state (only once the hook is in).
fn open(env: &Env, key: usize) -> napi::Result<()> {
    // Before any promise of this environment exists: cleanup hooks run in reverse order of
    // registration, so this one runs after napi-rs's own hooks that retire each pending
    // promise's threadsafe function, and cancelling the jobs here settles nothing.
    env.add_env_cleanup_hook(key, |key| {
        close(key);
        ENVIRONMENTS.with_borrow_mut(|all| all.remove(&key));
        listeners::forget(key);
        signal::forget(key);
    })?;
    ENVIRONMENTS.with_borrow_mut(|all| {
        all.insert(
            key,
            State {
                root: CancelSource::new(),
                running: Arc::new(Running::default()),
                closed: false,
                exit_heard: false,
                next_job: 0,
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

/// How many jobs of an environment are still to settle, for its teardown to wait on.
#[derive(Default)]
pub(crate) struct Running {
    count: Mutex<usize>,
    idle: Condvar,
}

impl Running {
    pub(crate) fn started(&self) {
        *sync::lock(&self.count) += 1;
    }

    pub(crate) fn finished(&self) {
        let mut count = sync::lock(&self.count);
        *count = count.saturating_sub(1);
        if *count == 0 {
            self.idle.notify_all();
        }
    }

    /// Waits until no job runs, or `grace` has passed.
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
    }
}
