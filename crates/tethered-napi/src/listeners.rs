//! One abort listener per signal: every job of an environment that waits on the same
//! `AbortSignal` shares one `abort` listener, however many there are, so a signal shared by a
//! thousand calls carries one listener of ours (and never trips Node's
//! `MaxListenersExceededWarning`), and the last job to settle removes it.
//!
//! A signal is recognised by a `WeakMap` of the environment (signal to the number of its
//! entry), so nothing is written on the caller's object and a signal dropped by JavaScript is
//! not kept alive by the map.
//!
//! # States of a signal's entry
//!
//! ```text
//!  (none) ──first job listens──▶ Listening ──the signal fires──▶ Fired
//!  Listening ──its last job settles──▶ (none; listener removed, map entry deleted)
//!  Fired ──its last job settles──▶ (none; the listener went with `once`)
//! ```
//!
//! In `Fired`, the jobs still in the entry are joined ones, waiting for their closures: each
//! reads the signal's `reason` when it settles. A job that listens on a signal whose entry has
//! fired (a hand-made signal that reads not-aborted after firing) gets a fresh entry.
//!
//! Everything here runs on the environment's thread, in a thread-local apart from
//! `environment`'s; the thread-local is never borrowed while JavaScript runs (a signal's
//! methods are the caller's code, and may start or settle jobs).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use napi::bindgen_prelude::{
    FnArgs, Function, FunctionRef, JsObjectValue, JsValue, Object, ObjectRef, Unknown,
};
use napi::{Env, ValueType};

use crate::signal::{self, Reason, Signal};

/// What a job does when its signal fires, on the environment's thread.
pub(crate) trait OnAbort {
    /// The signal fired with `reason` (`None` only if Node-API failed to read it).
    fn aborted(&self, env: &Env, reason: Option<&Reason<'_>>);
}

thread_local! {
    /// Per environment of this thread, by its `napi_env` address.
    static SIGNALS: RefCell<HashMap<usize, Signals>> = RefCell::new(HashMap::new());
}

#[derive(Default)]
struct Signals {
    /// `WeakMap` from a signal to the number of its entry; made with the first entry.
    map: Option<ObjectRef<false>>,
    next: u64,
    entries: HashMap<u64, Entry>,
    /// Which entry each job listens through.
    job_entry: HashMap<u64, u64>,
}

struct Entry {
    signal: ObjectRef<false>,
    listener: FunctionRef<(), ()>,
    jobs: Vec<(u64, Arc<dyn OnAbort>)>,
    fired: bool,
}

fn key(env: &Env) -> usize {
    env.raw() as usize
}

/// Forgets an environment's entries (its teardown: no listener matters any more).
pub(crate) fn forget(env_key: usize) {
    let gone = SIGNALS.with_borrow_mut(|all| all.remove(&env_key));
    drop(gone);
}

/// Job `job` listens on `signal`: `on_abort` runs when it fires, until [`release`].
///
/// # Errors
///
/// A Node-API failure, or the signal's `addEventListener` throwing; nothing is kept then.
pub(crate) fn listen(
    env: &Env,
    job: u64,
    signal: &Signal<'_>,
    on_abort: Arc<dyn OnAbort>,
) -> napi::Result<()> {
    let env_key = key(env);
    let map = weak_map(env)?;
    let known = map_get(&map, signal.object())?;
    let joined = known.and_then(|id| {
        SIGNALS.with_borrow_mut(|all| {
            let signals = all.get_mut(&env_key)?;
            let entry = signals.entries.get_mut(&id).filter(|entry| !entry.fired)?;
            entry.jobs.push((job, on_abort.clone()));
            signals.job_entry.insert(job, id);
            Some(())
        })
    });
    if joined.is_some() {
        return Ok(());
    }

    // A new entry, kept before the listener is added: a signal may call it at once.
    let id = SIGNALS.with_borrow_mut(|all| {
        let signals = all.entry(env_key).or_default();
        signals.next += 1;
        signals.next
    });
    let listener =
        env.create_function_from_closure::<(), (), _>("tetheredNapiAbort", move |ctx| {
            // `this` is the signal the listener was added to.
            let this = ctx.this::<Object<'_>>().ok();
            fired(ctx.env, env_key, id, this);
            Ok(())
        })?;
    let entry = Entry {
        signal: signal.object().create_ref()?,
        listener: listener.create_ref()?,
        jobs: vec![(job, on_abort)],
        fired: false,
    };
    SIGNALS.with_borrow_mut(|all| {
        let signals = all.entry(env_key).or_default();
        signals.entries.insert(id, entry);
        signals.job_entry.insert(job, id);
    });
    let added = map_set(&map, signal.object(), id).and_then(|()| signal.listen(&listener));
    if added.is_err() {
        let _ = release(env, job);
    }
    added
}

/// The listener of entry `id`: every job still in it hears the abort, the last to listen
/// first. Jobs queued behind a bound (the default pool, a scope) listened after the ones that
/// run, so they are all cancelled before any running job is, and none of them starts in a
/// place a cancelled running job frees.
fn fired(env: &Env, env_key: usize, id: u64, this: Option<Object<'_>>) {
    let found = SIGNALS.with_borrow_mut(|all| {
        let entry = all.get_mut(&env_key)?.entries.get_mut(&id)?;
        entry.fired = true;
        Some(entry.jobs.clone())
    });
    let Some(jobs) = found else {
        return;
    };
    let reason = this.and_then(|signal| signal::inspect(env, &signal));
    for (_, job) in jobs.into_iter().rev() {
        job.aborted(env, reason.as_ref());
    }
}

/// Job `job` is done with its signal: its promise settles, or it rejected when the signal
/// fired. Gives the signal's `reason` if the signal fired; the last job of an entry removes the
/// listener (unless it fired and went) and forgets the signal.
pub(crate) fn release<'env>(env: &'env Env, job: u64) -> Option<Unknown<'env>> {
    let env_key = key(env);
    let taken = SIGNALS.with_borrow_mut(|all| {
        let signals = all.get_mut(&env_key)?;
        let id = signals.job_entry.remove(&job)?;
        let entry = signals.entries.get_mut(&id)?;
        entry.jobs.retain(|(listening, _)| *listening != job);
        let signal = entry.signal.get_value(env).ok();
        let fired = entry.fired;
        let last = entry
            .jobs
            .is_empty()
            .then(|| signals.entries.remove(&id))
            .flatten();
        Some((
            id,
            signal,
            fired,
            last,
            signals.map.as_ref().and_then(|map| map.get_value(env).ok()),
        ))
    });
    let (id, signal, fired, last, map) = taken?;
    // JavaScript runs from here on, with no borrow held, and none of it can leave an
    // exception pending (see `helpers.rs`).
    let reason = match (&signal, fired) {
        (Some(signal), true) => signal::inspect(env, signal).map(|reason| reason.value),
        _ => None,
    };
    if let Some(entry) = last {
        if let Some(signal) = &signal {
            if !fired && let Ok(listener) = entry.listener.borrow_back(env) {
                signal::unlisten(env, signal, &listener);
            }
            if let Some(map) = &map
                && map_get(map, signal).ok().flatten() == Some(id)
            {
                let _ = map_delete(map, signal);
            }
        }
        let _ = entry.signal.unref(env);
    }
    reason
}

/// The environment's `WeakMap`, made on first use.
fn weak_map<'env>(env: &'env Env) -> napi::Result<Object<'env>> {
    let env_key = key(env);
    let known = SIGNALS.with_borrow(|all| {
        all.get(&env_key)
            .and_then(|signals| signals.map.as_ref())
            .map(|map| map.get_value(env))
    });
    if let Some(map) = known {
        return map;
    }
    let constructor: Function<'_, (), Unknown<'_>> =
        env.get_global()?.get_named_property("WeakMap")?;
    let map = constructor.new_instance(())?.coerce_to_object()?;
    let map_ref = map.create_ref()?;
    SIGNALS.with_borrow_mut(|all| all.entry(env_key).or_default().map = Some(map_ref));
    Ok(map)
}

/// The number of `signal`'s entry in `map`, if it has one.
fn map_get(map: &Object<'_>, signal: &Object<'_>) -> napi::Result<Option<u64>> {
    let get: Function<'_, FnArgs<(Object<'_>,)>, Unknown<'_>> = map.get_named_property("get")?;
    let value = get.apply(*map, FnArgs::from((*signal,)))?;
    if value.get_type()? != ValueType::Number {
        return Ok(None);
    }
    let number = value.coerce_to_number()?.get_double()?;
    Ok(Some(number as u64))
}

fn map_set(map: &Object<'_>, signal: &Object<'_>, id: u64) -> napi::Result<()> {
    let set: Function<'_, FnArgs<(Object<'_>, f64)>, Unknown<'_>> =
        map.get_named_property("set")?;
    set.apply(*map, FnArgs::from((*signal, id as f64)))?;
    Ok(())
}

fn map_delete(map: &Object<'_>, signal: &Object<'_>) -> napi::Result<()> {
    let delete: Function<'_, FnArgs<(Object<'_>,)>, Unknown<'_>> =
        map.get_named_property("delete")?;
    delete.apply(*map, FnArgs::from((*signal,)))?;
    Ok(())
}
