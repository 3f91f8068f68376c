// Finding native code that ignores its token, from JavaScript: `cancelStats()` counts by reason
// the cancels that reached running work and the returns after them, and times the returns by
// job name; `stubbornJobs()` lists a job still running past `setStubbornAfter(ms)` until it
// returns.
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';

import { addon, sleep, waitFor } from './helpers.mjs';

afterEach(() => addon.setStubbornAfter(1000));

const delta = (after, before, key, reason) => after[key][reason] - before[key][reason];

/** Starts `named(...)` with a signal, and aborts it once its job runs. */
async function abortWhenRunning(name, ms, honour) {
  const controller = new AbortController();
  const running = addon.stats().running;
  const call = addon.named(name, ms, honour, { signal: controller.signal });
  await waitFor('the job to run', () => addon.stats().running > running);
  await sleep(20);
  controller.abort();
  await assert.rejects(call, { name: 'AbortError', reason: 'Dropped' });
}

test('a job that honours its abort is counted and timed, and never stubborn', async () => {
  addon.setStubbornAfter(200);
  const before = addon.cancelStats();
  await abortWhenRunning('js-honest', 30_000, true);
  await waitFor('its return timed', () => 'js-honest' in addon.cancelStats().cancelToReturn);
  const after = addon.cancelStats();
  assert.equal(delta(after, before, 'reachedRunning', 'Dropped'), 1);
  assert.equal(delta(after, before, 'returnedAfterCancel', 'Dropped'), 1);
  const timed = after.cancelToReturn['js-honest'];
  assert.equal(timed.count, 1);
  assert.ok(timed.maxMs >= 0 && timed.maxMs < 1000, JSON.stringify(timed));
  assert.ok(timed.p50Ms !== null && timed.p50Ms <= Math.max(timed.maxMs, 0.01));
  assert.equal(timed.buckets.reduce((sum, bucket) => sum + bucket.count, 0), 1);
  assert.equal(timed.buckets[0].leMs, 0.01);
  assert.equal(timed.buckets.at(-1).leMs, Infinity);
  await sleep(300);
  assert.ok(addon.stubbornJobs().every((job) => job.name !== 'js-honest'));
  assert.equal(after.stubborn, before.stubborn);
});

test('a job that ignores its abort is listed while it runs on, then timed when it returns', async () => {
  addon.setStubbornAfter(200);
  const before = addon.cancelStats();
  const started = Date.now();
  // The promise rejects at the abort; the native work runs on for 1.5 s.
  await abortWhenRunning('js-stubborn', 1500, false);
  const listed = () => addon.stubbornJobs().filter((job) => job.name === 'js-stubborn');
  await waitFor('the job listed as stubborn', () => listed().length === 1);
  const [job] = listed();
  assert.equal(job.reason, 'Dropped');
  assert.ok(job.sinceCancelMs >= 200, JSON.stringify(job));
  assert.equal(typeof job.id, 'number');
  assert.ok(job.cause === null || typeof job.cause === 'string');
  const meanwhile = addon.cancelStats();
  assert.equal(delta(meanwhile, before, 'reachedRunning', 'Dropped'), 1);
  assert.equal(delta(meanwhile, before, 'returnedAfterCancel', 'Dropped'), 0);
  assert.equal(meanwhile.stubborn, before.stubborn + 1);
  assert.ok(!('js-stubborn' in meanwhile.cancelToReturn));

  await waitFor('the job to return', () => listed().length === 0, 10_000);
  assert.ok(Date.now() - started >= 1000);
  await waitFor('its return timed', () => 'js-stubborn' in addon.cancelStats().cancelToReturn);
  const after = addon.cancelStats();
  assert.equal(delta(after, before, 'returnedAfterCancel', 'Dropped'), 1);
  const slow = after.cancelToReturn['js-stubborn'];
  assert.equal(slow.count, 1);
  assert.ok(slow.maxMs >= 200, JSON.stringify(slow));
});

test('any job name is an own key of cancelToReturn, __proto__ too', async () => {
  await abortWhenRunning('__proto__', 30_000, true);
  await waitFor('its return timed', () =>
    Object.hasOwn(addon.cancelStats().cancelToReturn, '__proto__'),
  );
  const byName = addon.cancelStats().cancelToReturn;
  assert.equal(Object.getPrototypeOf(byName), null);
  assert.equal(byName['__proto__'].count, 1);
  assert.ok(Object.keys(byName).includes('__proto__'));
});

test('setStubbornAfter refuses what is no duration, as Node does', () => {
  for (const bad of [-1, NaN]) {
    assert.throws(() => addon.setStubbornAfter(bad), {
      name: 'RangeError',
      code: 'ERR_OUT_OF_RANGE',
      message: /from 0 to Infinity/,
    });
  }
  addon.setStubbornAfter(Infinity);
  addon.setStubbornAfter(0);
});
