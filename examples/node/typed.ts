// A typed caller of the example addon: `tsc --noEmit` checks it against the declarations
// napi-rs generates for the addon (`addon/index.d.ts`, with tethered-napi's own prepended).
// `.ci/run` runs the check; nothing here is executed.
import {
  spin,
  spinJoined,
  stats,
  type CallOptions,
  type CancelReason,
  type NativeAbortError,
  type NativeError,
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

export const running: number = stats().running;

// @ts-expect-error: the options come last, as an object, never a bare signal.
void spin(10, AbortSignal.timeout(10));
