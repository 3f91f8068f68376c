// 1,000 jobs aborted at once: every closure returns, nothing is left running, and the process
// burns no CPU afterwards; the naive AsyncTask's aborted loops burn on until cleaned up.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addon, isAbortError, sleep, track, waitFor } from './helpers.mjs';

/** CPU time (user + system, all threads) the process spends over `ms`, in ms. */
async function cpuOver(ms) {
  const before = process.cpuUsage();
  await sleep(ms);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

test('1,000 jobs aborted at once all stop, and nothing burns afterwards', async () => {
  addon.takeStops();
  const controller = new AbortController();
  const jobs = Array.from({ length: 1000 }, () => track(addon.pulse(120_000, { signal: controller.signal })));
  await waitFor('1,000 closures to run', () => addon.live() === 1000, 60_000);
  controller.abort();
  await Promise.all(jobs.map((job) => job.done));
  for (const job of jobs) {
    isAbortError(job.error, { cause: controller.signal.reason });
  }
  await waitFor('every closure to return', () => addon.live() === 0, 10_000);
  await waitFor('tethered to count none running', () => addon.stats().running === 0, 10_000);
  assert.equal(addon.takeStops().length, 1000);
  const cpu = await cpuOver(500);
  // Idle Node spends a few ms here; one thread still spinning would spend 500.
  assert.ok(cpu < 150, `the process spent ${cpu} ms of CPU in the 500 ms after the abort`);
});

test('the naive AsyncTask: aborted loops burn on until cleaned up', async () => {
  // libuv's pool runs 4 at a time; the abort cancels the ones still queued, not those.
  const controller = new AbortController();
  const jobs = Array.from({ length: 8 }, () => track(addon.naiveSpin(120_000, controller.signal)));
  await waitFor('the pool\'s loops to start', () => addon.naiveLive() >= 2, 10_000);
  controller.abort();
  await sleep(100);
  const running = addon.naiveLive();
  assert.ok(running >= 2, `only ${running} naive loops ran on after the abort`);
  const cpu = await cpuOver(500);
  assert.ok(cpu > 300, `the aborted naive loops spent only ${cpu} ms of CPU in 500 ms`);
  // Clean up.
  addon.stopNaive();
  await waitFor('the naive loops to end', () => addon.naiveLive() === 0, 10_000);
  await Promise.all(jobs.map((job) => job.done));
  // The started ones resolved as if nothing happened; the queued ones were cancelled.
  assert.ok(jobs.some((job) => job.error === undefined), 'no started naive task resolved');
});
