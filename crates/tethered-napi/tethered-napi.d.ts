// TypeScript declarations of tethered-napi's JavaScript surface: prepend them to an addon's
// generated declarations (napi-rs's `dtsHeaderFile`), which name `CallOptions`.

/** The options a tethered native call takes last, as Node's and the web's APIs do. */
export interface CallOptions {
  /** Aborting it cancels the native job, and the call's promise rejects with an `AbortError`. */
  signal?: AbortSignal | null
}

/** Why a native job was stopped: the same names in every language tethered bridges. */
export type CancelReason = 'Requested' | 'Dropped' | 'Timeout' | 'Shutdown' | 'Failed'

/** What the promise of a native job that was stopped rejects with. */
export interface NativeAbortError extends Error {
  name: 'AbortError'
  code: 'ABORT_ERR'
  /**
   * `signal.reason` when the call's signal aborted; a `DOMException` named `TimeoutError` for
   * a deadline of the job's own; an `Error` with the cancel's cause otherwise.
   */
  cause?: unknown
  /** Why the job's token was cancelled. */
  reason: CancelReason
  /** What the closure returned after the cancel, when the promise waited for it (a grace). */
  returned?: unknown
}

/** What the promise of a native job that failed otherwise rejects with. */
export interface NativeError extends Error {
  code: 'ERR_NATIVE_PANIC' | 'ERR_NATIVE_SPAWN' | 'ERR_NATIVE_CLOSING'
}

/** The napi status a Rust `napi::Error` carries: the `code` of the error it becomes. */
export type NapiStatus =
  | 'InvalidArg' | 'ObjectExpected' | 'StringExpected' | 'NameExpected' | 'FunctionExpected'
  | 'NumberExpected' | 'BooleanExpected' | 'ArrayExpected' | 'GenericFailure'
  | 'PendingException' | 'Cancelled' | 'EscapeCalledTwice' | 'HandleScopeMismatch'
  | 'CallbackScopeMismatch' | 'QueueFull' | 'Closing' | 'BigintExpected' | 'DateExpected'
  | 'ArrayBufferExpected' | 'DetachableArraybufferExpected' | 'WouldDeadlock'
  | 'NoExternalBuffersAllowed' | 'Unknown'

/**
 * What the promise rejects with when the native closure returned an `Err`: napi-rs's error,
 * its `message` the error's reason, its `code` the napi status the Rust code gave it
 * (`Error::new(Status::InvalidArg, ..)` rejects with `code: 'InvalidArg'`;
 * `Error::from_reason(..)` with `'GenericFailure'`).
 */
export interface NativeFailure extends Error {
  code: NapiStatus
}

/** Every way a tethered native call's promise rejects. */
export type NativeCallError = NativeAbortError | NativeError | NativeFailure | InvalidOptionsError

/** A call's bad options: not an object, or a `signal` that is no `AbortSignal`. */
export interface InvalidOptionsError extends TypeError {
  code: 'ERR_INVALID_ARG_TYPE'
}

/** A count per cancel reason. */
export type ByReason = Record<CancelReason, number>

/** The time from a cancel reaching running native work to its return, for one job name. */
export interface CancelToReturn {
  count: number
  sumMs: number
  maxMs: number
  /** Upper estimates (a bucket's bound); `null` with nothing recorded. */
  p50Ms: number | null
  p99Ms: number | null
  /** Each counts the returns slower than the bound before it, up to its own `leMs`. */
  buckets: Array<{ leMs: number; count: number }>
}

/** What cancels did to the addon's running native work (`cancelStats()`). */
export interface CancelStats {
  /** Cancels that reached a job whose work was running. */
  reachedRunning: ByReason
  /** Jobs whose work returned after such a cancel. */
  returnedAfterCancel: ByReason
  /** Jobs whose promise stopped waiting after their grace. */
  abandoned: ByReason
  /** Jobs ever listed by `stubbornJobs()`. */
  stubborn: number
  /** By job name (`''` for unnamed jobs), without a prototype: any name is an own key. */
  cancelToReturn: Record<string, CancelToReturn>
}

/** A job cancelled and still running past the threshold (`stubbornJobs()`). */
export interface StubbornJob {
  id: number
  name: string | null
  reason: CancelReason
  cause: string | null
  sinceCancelMs: number
}
