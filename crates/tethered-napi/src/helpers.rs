//! The crate's JavaScript half: functions compiled once per environment, where a `try` can
//! contain what the caller's objects throw, and where the promises, errors and abort listeners
//! JavaScript code sees are made as JavaScript makes its own.
//!
//! What each job needs of JavaScript is one call here: `begin` reads its options, `promise`
//! makes its promise, `listen` puts it on its signal's one listener, `settle` builds what the
//! promise settles with (an `AbortError` whose `cause` is the signal's reason, a coded `Error`)
//! and settles it, taking the job off its signal's listener in the same call. A signal's
//! listener is JavaScript too: it reads the signal's reason and hands each of its jobs to the
//! Rust function the job listened with (`abort.rs`), newest first.
//!
//! They never throw, except `listen` (a signal whose `addEventListener` throws), and `begin`
//! returns what a bad option throws as a rejected promise: a caller's `reason` whose getters,
//! `message` or conversion to text throw (`Object.create(null)`, a revoked `Proxy`), or a
//! hand-made signal whose `removeEventListener` throws, is contained here. An exception that
//! Node-API left pending would fail every later call and then end the process as an uncaught
//! exception; the helpers are called with napi-rs's `Function::call`, which takes a thrown
//! exception into its `Err` and leaves none pending.

use std::cell::RefCell;
use std::collections::HashMap;

use napi::Env;
use napi::bindgen_prelude::{
    FnArgs, FromNapiValue, Function, JsObjectValue, JsValuesTupleIntoVec, Object, ObjectRef,
};

const SOURCE: &str = r#"
const pending = new Map();
// Each signal's entry: its one listener, the jobs on it (by number, each with what the listener
// hands it to), and, once it fired, its reason.
const bySignal = new WeakMap();
// The entry of each job that listens.
const entryOf = new Map();

class AbortError extends Error {
  constructor(message, options) {
    super(message, options);
    this.code = 'ABORT_ERR';
  }
}
Object.defineProperty(AbortError.prototype, 'name', {
  value: 'AbortError', writable: true, enumerable: false, configurable: true,
});

function describe(value) {
  if (value === null) return 'null';
  if (typeof value === 'function') return `function ${value.name || '<anonymous>'}`;
  if (typeof value === 'object') {
    try {
      const name = value.constructor && value.constructor.name;
      return name ? `an instance of ${name}` : 'an object';
    } catch (_) {
      return 'an object';
    }
  }
  let shown;
  try { shown = typeof value === 'string' ? JSON.stringify(value) : String(value); } catch (_) { shown = '?'; }
  if (shown.length > 28) shown = `${shown.slice(0, 25)}...`;
  return `type ${typeof value} (${shown})`;
}

function typeError(message) {
  const error = new TypeError(message);
  error.code = 'ERR_INVALID_ARG_TYPE';
  return error;
}

function signalOf(value) {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' && typeof value !== 'function') {
    throw typeError(`The "options" argument must be of type object. Received ${describe(value)}`);
  }
  const signal = value.signal;
  if (signal === undefined || signal === null) return undefined;
  if (typeof signal !== 'object' || !('aborted' in signal)
      || typeof signal.addEventListener !== 'function'
      || typeof signal.removeEventListener !== 'function') {
    throw typeError(
      `The "options.signal" property must be an instance of AbortSignal. Received ${describe(signal)}`);
  }
  return signal;
}

// The longest text of a reason the native code gets as the cancel's cause.
const MAX_TEXT = 1000;

// The reason's text for the native side: its `message` (an Error, a DOMException), a string
// as it is, a plain object or an array as JSON (`{"code":"USER"}`, not "[object Object]"),
// anything else as `String(reason)`.
function textOf(reason) {
  if (reason !== null && typeof reason === 'object') {
    if (typeof reason.message === 'string') return reason.message;
    const proto = Object.getPrototypeOf(reason);
    if (proto === Object.prototype || proto === null || Array.isArray(reason)) {
      let json;
      try { json = JSON.stringify(reason); } catch (_) {} // a cycle, a BigInt
      if (typeof json === 'string') return json;
    }
  }
  return String(reason);
}

function inspect(signal) {
  let reason;
  try { reason = signal.reason; } catch (thrown) { reason = thrown; }
  let timeout = false;
  let text;
  try {
    timeout = reason !== null && typeof reason === 'object' && reason.name === 'TimeoutError';
    text = textOf(reason);
  } catch (_) {
    text = 'aborted (with a reason that has no text)';
  }
  if (text.length > MAX_TEXT) text = `${text.slice(0, MAX_TEXT - 3)}...`;
  return [reason, timeout, text];
}

function abortError(message, cause, hasCause, reason) {
  const error = hasCause ? new AbortError(message, { cause }) : new AbortError(message);
  error.reason = reason;
  return error;
}

// Takes job `id` off its signal's listener; the last job of an entry that has not fired
// removes the listener. The entry, if the job had one.
function release(id) {
  const entry = entryOf.get(id);
  if (entry === undefined) return undefined;
  entryOf.delete(id);
  entry.jobs.delete(id);
  if (entry.jobs.size === 0 && !entry.fired) {
    try { entry.signal.removeEventListener('abort', entry.listener); } catch (_) {}
    if (bySignal.get(entry.signal) === entry) bySignal.delete(entry.signal);
  }
  return entry;
}

// What a promise settles with: `how` says which; the rest as each needs.
function outcome(id, how, value, text, name, cause, returned) {
  let error;
  switch (how) {
    case 'resolve': return value;
    case 'reject': return value;
    case 'abort-signal': {
      const entry = entryOf.get(id);
      const reason = entry === undefined ? undefined : entry.reason;
      error = abortError(text, reason, entry !== undefined, name);
      break;
    }
    case 'abort-timeout':
      error = abortError(text, new DOMException(text, 'TimeoutError'), true, name);
      break;
    case 'abort-text':
      error = abortError(text, new Error(cause), true, name);
      break;
    case 'abort':
      error = abortError(text, undefined, false, name);
      break;
    default: // 'coded'
      error = new Error(text);
      error.code = name;
  }
  if (returned !== undefined) {
    try { error.returned = returned[0]; } catch (_) {}
  }
  return error;
}

return {
  begin(options) {
    // The call's signal (undefined for none), or the promise it settles with at once: a
    // TypeError for bad options, an AbortError for a signal aborted already (or what a
    // getter of the caller's threw).
    try {
      const signal = signalOf(options);
      if (signal === undefined || !signal.aborted) return signal;
      const [reason, timeout] = inspect(signal);
      return Promise.reject(abortError('The operation was aborted', reason, true, timeout ? 'Timeout' : 'Dropped'));
    } catch (thrown) {
      return Promise.reject(thrown);
    }
  },
  // Job `id` listens on `signal`: when it fires, `fired(job, timeout, text)` is called for it
  // (`job` is what the Rust side gave, its handler), the newest job of the signal first. The
  // job joins the signal's entry before its listener is added: a hand-made signal that fires
  // while it is added calls it at once.
  listen(signal, id, job, fired) {
    let entry = bySignal.get(signal);
    if (entry === undefined || entry.fired) {
      const made = { signal, jobs: new Map(), fired: false, reason: undefined, listener: undefined };
      made.listener = function () {
        made.fired = true;
        if (bySignal.get(signal) === made) bySignal.delete(signal);
        const [reason, timeout, text] = inspect(signal);
        made.reason = reason;
        for (const handler of [...made.jobs.values()].reverse()) {
          try { fired(handler, timeout, text); } catch (_) {} // one job's failure stops no other
        }
      };
      entry = made;
      bySignal.set(signal, entry);
      entry.jobs.set(id, job);
      entryOf.set(id, entry);
      try {
        signal.addEventListener('abort', entry.listener, { once: true });
      } catch (thrown) {
        release(id);
        throw thrown;
      }
      return;
    }
    entry.jobs.set(id, job);
    entryOf.set(id, entry);
  },
  release,
  promise(id) {
    return new Promise((resolve, reject) => { pending.set(id, [resolve, reject]); });
  },
  isPending(id) {
    return pending.has(id);
  },
  // Settles job `id`'s promise (see `outcome`) and takes the job off its signal: `true` if
  // this settled it.
  settle(id, how, value, text, name, cause, returned) {
    const settled = outcome(id, how, value, text, name, cause, returned);
    release(id);
    const found = pending.get(id);
    if (found === undefined) return false;
    pending.delete(id);
    found[how === 'resolve' ? 0 : 1](settled);
    return true;
  },
  // A promise rejected at once (a call that could not start).
  rejected(how, value, text, name) {
    return Promise.reject(outcome(-1, how, value, text, name, undefined, undefined));
  },
};
"#;

thread_local! {
    /// The helpers of each environment of this thread, by its `napi_env` address.
    static COMPILED: RefCell<HashMap<usize, ObjectRef<false>>> = RefCell::new(HashMap::new());
}

/// The environment's helpers, compiled on first use.
pub(crate) fn helpers(env: &Env) -> napi::Result<Object<'_>> {
    let key = env.raw() as usize;
    if let Some(known) =
        COMPILED.with_borrow(|all| all.get(&key).map(|helpers| helpers.get_value(env)))
    {
        return known;
    }
    let helpers: Object<'_> = env.run_script(format!("(() => {{{SOURCE}}})()"))?;
    let kept = helpers.create_ref()?;
    COMPILED.with_borrow_mut(|all| all.insert(key, kept));
    Ok(helpers)
}

/// Calls helper `name` with `args`.
pub(crate) fn call<Args, Return>(env: &Env, name: &str, args: Args) -> napi::Result<Return>
where
    FnArgs<Args>: JsValuesTupleIntoVec,
    Return: FromNapiValue,
{
    let helpers = helpers(env)?;
    let function: Function<'_, FnArgs<Args>, Return> = helpers.get_named_property(name)?;
    function.call(FnArgs::from(args))
}

/// Forgets an environment's helpers (its teardown).
pub(crate) fn forget(env_key: usize) {
    let gone = COMPILED.with_borrow_mut(|all| all.remove(&env_key));
    drop(gone);
}
