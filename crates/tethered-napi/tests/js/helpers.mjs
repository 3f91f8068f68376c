// What the suite's files share: the addon (built by tests/node.rs, named by
// TETHERED_NAPI_ADDON), waiting with a bound, and the naive napi-rs AsyncTask shown still
// running after its abort.
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';

const require = createRequire(import.meta.url);

const path = process.env.TETHERED_NAPI_ADDON && resolve(process.env.TETHERED_NAPI_ADDON);
if (!path) {
  throw new Error('TETHERED_NAPI_ADDON is not set: run the suite with `cargo test -p tethered-napi`');
}
export const addon = require(path);
export const addonPath = path;

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Waits until `condition()` holds, failing with `what` after `ms`. */
export async function waitFor(what, condition, ms = 5000) {
  const until = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > until) {
      throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    }
    await sleep(2);
  }
}

/** Tracks whether `promise` has settled, and how. */
export function track(promise) {
  const state = { settled: false, value: undefined, error: undefined, at: 0 };
  state.done = promise.then(
    (value) => Object.assign(state, { settled: true, value, at: performance.now() }),
    (error) => Object.assign(state, { settled: true, error, at: performance.now() }),
  );
  return state;
}

/**
 * Checks `err` is the AbortError a stopped job's promise rejects with: `name`, `code`, the
 * job's `reason`, and (when given) its `cause`. Returns true, for `assert.rejects`.
 */
export function isAbortError(err, { reason, cause } = {}) {
  assert.ok(err instanceof Error, `not an Error: ${err}`);
  assert.equal(err.name, 'AbortError');
  assert.equal(err.code, 'ABORT_ERR');
  if (reason !== undefined) assert.equal(err.reason, reason);
  if (cause !== undefined) assert.equal(err.cause, cause);
  return true;
}

/** The stops the addon's closures recorded, reasons only. */
export function stopReasons() {
  return addon.takeStops().map((stop) => stop.reason);
}

/**
 * The naive version: napi-rs's `AsyncTask::with_optional_signal`. `abort` is called with a
 * signal of the same kind as the test's; once the task runs, the abort changes nothing: the
 * loop is still running (and its promise pending) well after it. Then the test cleans it up.
 */
export async function naiveRunsOnAfterAbort(abort) {
  const before = addon.naiveLive();
  const controller = new AbortController();
  const naive = track(addon.naiveSpin(60_000, controller.signal));
  await waitFor('the naive loop to start', () => addon.naiveLive() > before);
  await abort(controller);
  await sleep(200);
  assert.ok(addon.naiveLive() > before, 'the naive loop stopped by itself');
  assert.equal(naive.settled, false, 'the naive promise settled after the abort');
  // Clean up: the addon's own back door ends every naive loop.
  addon.stopNaive();
  await waitFor('the naive loop to end', () => addon.naiveLive() === before);
  await naive.done;
}
