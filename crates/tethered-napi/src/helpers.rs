//! The crate's JavaScript half: functions compiled once per environment, where a `try` can
//! contain what the caller's objects throw, and where the promises and errors JavaScript code
//! sees are made as JavaScript makes its own.
//!
//! They never throw, except `listen` (a signal whose `addEventListener` throws), and `begin`
//! returns what a bad option throws as a rejected promise: a caller's `reason` whose getters, `message` or
//! conversion to text throw (`Object.create(null)`, a revoked `Proxy`), or a hand-made signal
//! whose `removeEventListener` throws, is contained here. An exception that Node-API left
//! pending would fail every later call and then end the process as an uncaught exception; the
//! helpers are called with napi-rs's `Function::call`, which takes a thrown exception into its
//! `Err` and leaves none pending.

use std::cell::RefCell;
use std::collections::HashMap;

use napi::Env;
use napi::bindgen_prelude::{
    FnArgs, FromNapiValue, Function, JsObjectValue, JsValuesTupleIntoVec, Object, ObjectRef,
};

const SOURCE: &str = r#"
const pending = new Map();

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

function inspect(signal) {
    let reason;
    try { reason = signal.reason; } catch (thrown) { reason = thrown; }
    let timeout = false;
    let text;
    try {
      if (reason !== null && typeof reason === 'object') {
        timeout = reason.name === 'TimeoutError';
        if (typeof reason.message === 'string') text = reason.message;
      }
      if (text === undefined) text = String(reason);
    } catch (_) {
      text = 'aborted (with a reason that has no text)';
    }
    return [reason, timeout, text];
}

function abortError(message, cause, hasCause, reason) {
  const error = hasCause ? new AbortError(message, { cause }) : new AbortError(message);
  error.reason = reason;
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
  inspect,
  listen(signal, listener) {
    signal.addEventListener('abort', listener, { once: true });
  },
  unlisten(signal, listener) {
    try { signal.removeEventListener('abort', listener); } catch (_) {}
  },
  promise(id) {
    return new Promise((resolve, reject) => { pending.set(id, [resolve, reject]); });
  },
  isPending(id) {
    return pending.has(id);
  },
  settle(id, fulfilled, value) {
    const found = pending.get(id);
    if (found === undefined) return false;
    pending.delete(id);
    found[fulfilled ? 0 : 1](value);
    return true;
  },
  rejected(error) {
    return Promise.reject(error);
  },
  abortError,
  timeoutCause(message) {
    return new DOMException(message, 'TimeoutError');
  },
  nativeError(message, code, reason) {
    const error = new Error(message);
    error.code = code;
    if (reason !== undefined && reason !== null) error.reason = reason;
    return error;
  },
  withReturned(error, value) {
    try { error.returned = value; } catch (_) {}
    return error;
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
