// The default pool: busy jobs beyond its size wait for a thread instead of outnumbering the
// cores, and after an abort no queued closure starts, in the pool or in a scope.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addon, isAbortError, sleep, stopReasons, track, waitFor } from './helpers.mjs';

test('busy jobs beyond the pool\'s size wait in its queue', async () => {
  addon.takeStops();
  const size = addon.poolSize();
  assert.ok(size >= 1);
  const controller = new AbortController();
  const jobs = Array.from({ length: size + 8 }, () => track(addon.spin(60_000, { signal: controller.signal })));
  await waitFor(`${size} closures to run`, () => addon.live() === size);
  await sleep(50);
  assert.equal(addon.live(), size, 'more closures run than the pool has threads');
  assert.equal(addon.stats().queued, 8);
  controller.abort();
  await Promise.all(jobs.map((job) => job.done));
  for (const job of jobs) {
    isAbortError(job.error, { reason: 'Dropped', cause: controller.signal.reason });
  }
  await waitFor('the closures to return', () => addon.live() === 0, 2000);
  assert.equal(stopReasons().length, size, 'a queued job ran after the abort');
  await waitFor('nothing queued', () => addon.stats().queued === 0, 2000);
});

for (const [where, run, bound] of [
  ['the pool', (signal) => addon.spin(60_000, { signal }), () => addon.poolSize()],
  ['a scope', (signal) => addon.scoped(60_000, { signal }), () => 2],
]) {
  test(`after an abort, no queued closure starts (${where}, 20 rounds of 16 queued jobs)`, async () => {
    const before = addon.startedCancelled();
    for (let round = 0; round < 20; round += 1) {
      addon.takeStops();
      const controller = new AbortController();
      const jobs = Array.from({ length: bound() + 16 }, () => track(run(controller.signal)));
      await waitFor(`${bound()} closures to run`, () => addon.live() === bound());
      controller.abort();
      await Promise.all(jobs.map((job) => job.done));
      await waitFor('the closures to return', () => addon.live() === 0, 2000);
      await sleep(5);
      assert.equal(addon.live(), 0, `round ${round}: a queued closure started after the abort`);
      assert.equal(stopReasons().length, bound(), `round ${round}: a queued closure ran`);
    }
    assert.equal(addon.startedCancelled(), before, 'a closure began with its token cancelled');
  });
}
