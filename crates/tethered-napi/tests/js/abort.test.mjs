// An abort reaches the running native loop: the token is cancelled with the signal's reason,
// the promise rejects with `signal.reason` at once (or, joined, once the loop returned), and
// the naive AsyncTask runs on after the same abort.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';
import { addon, naiveRunsOnAfterAbort, sleep, stopReasons, track, waitFor } from './helpers.mjs';

async function running(count = 1) {
  await waitFor(`${count} closure(s) to run`, () => addon.live() >= count);
}

test('abort() while the closure runs stops it and rejects with signal.reason', async () => {
  addon.takeStops();
  const controller = new AbortController();
  const job = track(addon.spin(60_000, controller.signal));
  await running();
  assert.equal(getEventListeners(controller.signal, 'abort').length, 1);
  const aborted = performance.now();
  controller.abort();
  await job.done;
  assert.equal(job.error, controller.signal.reason);
  assert.equal(job.error.name, 'AbortError');
  assert.ok(job.at - aborted < 1000, `rejected ${job.at - aborted} ms after the abort`);
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Custom(This operation was aborted)']);
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
  await naiveRunsOnAfterAbort((c) => c.abort());
});

test('abort(reason) carries the reason: its message to the token, itself to the promise', async () => {
  addon.takeStops();
  const controller = new AbortController();
  const job = addon.spin(60_000, controller.signal);
  await running();
  const reason = new RangeError('the client went away');
  controller.abort(reason);
  await assert.rejects(job, (err) => err === reason);
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Custom(the client went away)']);

  const plain = new AbortController();
  const other = addon.spin(60_000, plain.signal);
  await running();
  plain.abort('just a string');
  await assert.rejects(other, (err) => err === 'just a string');
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Custom(just a string)']);
});

test('AbortSignal.timeout cancels with Timeout and rejects with its TimeoutError', async () => {
  addon.takeStops();
  const signal = AbortSignal.timeout(100);
  await assert.rejects(addon.spin(60_000, signal), (err) => {
    assert.equal(err, signal.reason);
    assert.equal(err.name, 'TimeoutError');
    return true;
  });
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Timeout']);
  await naiveRunsOnAfterAbort(async (c) => {
    // The naive task takes the controller's signal; what fires it here is a timeout.
    const timeout = AbortSignal.timeout(50);
    await new Promise((resolve) => timeout.addEventListener('abort', resolve));
    c.abort(timeout.reason);
  });
});

test('AbortSignal.any: the first of its signals cancels, with that reason', async () => {
  addon.takeStops();
  const user = new AbortController();
  const signal = AbortSignal.any([user.signal, AbortSignal.timeout(60_000)]);
  const job = addon.spin(60_000, signal);
  await running();
  user.abort(new Error('user pressed stop'));
  await assert.rejects(job, (err) => err === user.signal.reason);
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Custom(user pressed stop)']);

  const quick = AbortSignal.any([new AbortController().signal, AbortSignal.timeout(50)]);
  await assert.rejects(addon.spin(60_000, quick), { name: 'TimeoutError' });
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Timeout']);
  await naiveRunsOnAfterAbort((c) => c.abort());
});

test('the joining variant rejects only after the closure returned', async () => {
  addon.takeStops();
  const controller = new AbortController();
  const job = track(addon.spinJoined(60_000, controller.signal));
  await running();
  controller.abort();
  await job.done;
  // The loop counts itself live until it returns, and the joined promise settles after that.
  assert.equal(addon.live(), 0, 'the joined promise settled while the closure still ran');
  assert.equal(job.error, controller.signal.reason);
  assert.deepEqual(stopReasons(), ['Custom(This operation was aborted)']);
  // Not cancelled, it resolves with the closure's value.
  assert.equal(typeof (await addon.spinJoined(5, new AbortController().signal)), 'number');
  await naiveRunsOnAfterAbort((c) => c.abort());
});

test('one signal serves 100 jobs with one listener, and the caller\'s own onabort stays', async () => {
  addon.takeStops();
  const warnings = [];
  const onWarning = (warning) => warnings.push(warning.name);
  process.on('warning', onWarning);
  const controller = new AbortController();
  let ownHandler = 0;
  controller.signal.onabort = () => { ownHandler += 1; };
  const jobs = Array.from({ length: 100 }, () => track(addon.pulse(60_000, controller.signal)));
  await running(100);
  // One listener of the addon's, beside the caller's onabort: no MaxListenersExceededWarning.
  assert.equal(getEventListeners(controller.signal, 'abort').length, 2);
  controller.abort();
  await Promise.all(jobs.map((job) => job.done));
  for (const job of jobs) {
    assert.equal(job.error, controller.signal.reason);
  }
  assert.equal(ownHandler, 1, 'the caller\'s onabort was overwritten');
  await waitFor('every closure to return', () => addon.live() === 0, 5000);
  assert.equal(stopReasons().length, 100);
  // What is left is the caller's own `onabort`.
  assert.equal(getEventListeners(controller.signal, 'abort').length, 1);
  await sleep(10);
  process.off('warning', onWarning);
  assert.deepEqual(warnings.filter((name) => name === 'MaxListenersExceededWarning'), []);
  await naiveRunsOnAfterAbort((c) => c.abort());
});

test('jobs sharing a signal: the last one to settle removes the listener', async () => {
  addon.takeStops();
  const controller = new AbortController();
  const quick = track(addon.add(1, 2, controller.signal));
  const slow = [track(addon.spin(60_000, controller.signal)), track(addon.spinJoined(60_000, controller.signal))];
  await quick.done;
  assert.equal(quick.value, 3);
  await running(2);
  assert.equal(getEventListeners(controller.signal, 'abort').length, 1, 'the first to settle took the listener');
  controller.abort();
  await Promise.all(slow.map((job) => job.done));
  for (const job of slow) {
    assert.equal(job.error, controller.signal.reason);
  }
  await waitFor('the closures to return', () => addon.live() === 0, 1000);
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
  // A fresh job on another signal, and one more on a finished one, start clean.
  const again = new AbortController();
  assert.equal(await addon.add(2, 2, again.signal), 4);
  assert.equal(getEventListeners(again.signal, 'abort').length, 0);
  addon.takeStops();
});

test('a cancel from elsewhere (a scope) rejects at once with an AbortError naming it', async () => {
  addon.takeStops();
  const controller = new AbortController();
  // Two run (the scope's bound), the third waits for a slot.
  const jobs = [0, 1, 2].map(() => track(addon.scoped(60_000, controller.signal)));
  await running(2);
  addon.cancelScoped(false);
  await Promise.all(jobs.map((job) => job.done));
  for (const job of jobs) {
    assert.equal(job.error.name, 'AbortError');
    assert.equal(job.error.message, 'the native job was cancelled: the scope was cancelled');
  }
  await waitFor('the closures to return', () => addon.live() === 0, 1000);
  assert.equal(stopReasons().length, 2, 'the queued job ran');
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0);

  const timed = track(addon.scoped(60_000));
  await running();
  addon.cancelScoped(true);
  await timed.done;
  assert.equal(timed.error.name, 'TimeoutError');
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Timeout']);
});

test('a cancel from another thread rejects at once too', async () => {
  addon.takeStops();
  const jobs = [track(addon.scoped(60_000)), track(addon.spinJoined(5))];
  await running(1);
  addon.cancelScopedFromThread(20);
  await jobs[0].done;
  assert.equal(jobs[0].error.name, 'AbortError');
  assert.equal(jobs[0].error.message, 'the native job was cancelled: cancelled from another thread');
  await jobs[1].done;
  assert.equal(typeof jobs[1].value, 'number', 'a job outside the scope was touched');
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Custom(cancelled from another thread)']);
});

test('an abort after the job finished changes nothing', async () => {
  const controller = new AbortController();
  assert.equal(await addon.add(2, 3, controller.signal), 5);
  controller.abort();
  await sleep(10);
  assert.deepEqual(addon.takeStops(), []);
});
