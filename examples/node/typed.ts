// A typed caller of the example addon: `tsc --noEmit` checks it against the declarations
// napi-rs generates for the addon (`addon/index.d.ts`, with tethered-napi's own prepended).
// `.ci/run` runs the check; nothing here is executed.
import {
  cancelStats,
  fail,
  setStubbornAfter,
  spin,
  spinJoined,
  stats,
  stubbornJobs,
  type CancelStats,
  type StubbornJob,
  type CallOptions,
  type CancelReason,
  type NapiStatus,
  type NativeAbortError,
  type NativeCallError,
  type NativeError,
  type NativeFailure,
} from './addon/index.js';

/** Narrows what a tethered promise rejected with. */
function isNativeAbort(err: unknown): err is NativeAbortError {
  return err instanceof Error && (err as { code?: unknown }).code === 'ABORT_ERR';
}

export async function render(frames: number, signal?: AbortSignal): Promise<number | CancelReason> {
  const options: CallOptions = { signal };
  try {
    return await spin(frames, options);
  } catch (err) {
    if (isNativeAbort(err)) {
      // The cause is `signal.reason` for an abort of the caller's signal.
      const why: unknown = err.cause;
      void why;
      return err.reason;
    }
    throw err;
  }
}

export async function flushed(signal: AbortSignal): Promise<number | undefined> {
  try {
    return await spinJoined(1000, { signal });
  } catch (err) {
    // A job with a grace rejects once its closure returned, with what it returned.
    return isNativeAbort(err) ? (err.returned as number | undefined) : undefined;
  }
}

export function failedCode(err: NativeError): NativeError['code'] {
  return err.code;
}

/** Every rejection of a tethered call is one of four shapes, told apart by `code`. */
export async function describe(message: string): Promise<string> {
  try {
    return String(await fail(message));
  } catch (caught) {
    const err = caught as NativeCallError;
    switch (err.code) {
      case 'ABORT_ERR':
        return `stopped: ${err.reason}`;
      case 'ERR_NATIVE_PANIC':
      case 'ERR_NATIVE_SPAWN':
      case 'ERR_NATIVE_CLOSING':
      case 'ERR_INVALID_ARG_TYPE':
        return err.message;
      default: {
        // The closure's own `Err`: napi-rs's error, coded with its status.
        const status: NapiStatus = (err as NativeFailure).code;
        return `${status}: ${err.message}`;
      }
    }
  }
}

// @ts-expect-error: `ERR_NATIVE_FAILED` is no code of a tethered rejection.
export const notACode: NativeError['code'] = 'ERR_NATIVE_FAILED';

export const running: number = stats().running;

// @ts-expect-error: the options come last, as an object, never a bare signal.
void spin(10, AbortSignal.timeout(10));

// Finding code that ignores its token: the figures in JavaScript's shape.
setStubbornAfter(500);
const figures: CancelStats = cancelStats();
export const dropped: number = figures.reachedRunning.Dropped;
export const slowest: number | undefined = figures.cancelToReturn['render']?.maxMs;
export const stubborn: string[] = stubbornJobs().map(
  (job: StubbornJob) => `${job.name ?? '(unnamed)'}: ${job.reason}, ${job.sinceCancelMs} ms`,
);
// @ts-expect-error: reasons are the `CancelReason` names.
void figures.reachedRunning.dropped;
