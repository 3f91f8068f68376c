// An abort reaches the running native loop: the token is cancelled with the reason table's
// reason (Dropped, Timeout), the JavaScript reason kept as its cause, and the promise rejects
// with an AbortError whose cause is `signal.reason`, within the abort (or, joined, once the
// loop returned); the naive AsyncTask runs on after the same abort.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';
import { addon, isAbortError, naiveRunsOnAfterAbort, sleep, stopReasons, track, waitFor } from './helpers.mjs';

async function running(count = 1) {
  await waitFor(`${count} closure(s) to run`, () => addon.live() >= count);
}

test('abort() while the closure runs stops it and rejects with an AbortError caused by signal.reason', async () => {
  addon.takeStops();
  const controller = new AbortController();
  const job = track(addon.spin(60_000, { signal: controller.signal }));
  await running();
  assert.equal(getEventListeners(controller.signal, 'abort').length, 1);
  controller.abort();
  // Within the abort: the rejection's handlers run in the next microtask.
  await Promise.resolve();
  await Promise.resolve();
  assert.ok(job.settled, 'the promise did not settle within abort()');
  isAbortError(job.error, { reason: 'Dropped', cause: controller.signal.reason });
  assert.equal(job.error.message, 'The operation was aborted');
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Dropped: This operation was aborted']);
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
  await naiveRunsOnAfterAbort((c) => c.abort());
});

test('abort(reason) keeps the reason: its message is the token\'s cause, itself the error\'s', async () => {
  addon.takeStops();
  const controller = new AbortController();
  const job = addon.spin(60_000, { signal: controller.signal });
  await running();
  const reason = new RangeError('the client went away');
  controller.abort(reason);
  await assert.rejects(job, (err) => isAbortError(err, { reason: 'Dropped', cause: reason }));
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Dropped: the client went away']);

  const plain = new AbortController();
  const other = addon.spin(60_000, { signal: plain.signal });
  await running();
  plain.abort('just a string');
  await assert.rejects(other, (err) => isAbortError(err, { cause: 'just a string' }));
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Dropped: just a string']);
});

test('AbortSignal.timeout cancels with Timeout; the AbortError\'s cause is its TimeoutError', async () => {
  addon.takeStops();
  const signal = AbortSignal.timeout(100);
  await assert.rejects(addon.spin(60_000, { signal }), (err) => {
    isAbortError(err, { reason: 'Timeout', cause: signal.reason });
    assert.equal(err.cause.name, 'TimeoutError');
    return true;
  });
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Timeout: The operation was aborted due to timeout']);
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
  const job = addon.spin(60_000, { signal });
  await running();
  user.abort(new Error('user pressed stop'));
  await assert.rejects(job, (err) => isAbortError(err, { reason: 'Dropped', cause: user.signal.reason }));
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Dropped: user pressed stop']);

  const quick = AbortSignal.any([new AbortController().signal, AbortSignal.timeout(50)]);
  await assert.rejects(addon.spin(60_000, { signal: quick }), (err) => isAbortError(err, { reason: 'Timeout' }));
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Timeout: The operation was aborted due to timeout']);
  await naiveRunsOnAfterAbort((c) => c.abort());
});

test('a job with a grace rejects only after the closure returned, with what it returned', async () => {
  addon.takeStops();
  const controller = new AbortController();
  const job = track(addon.spinJoined(60_000, { signal: controller.signal }));
  await running();
  controller.abort();
  await job.done;
  // The loop counts itself live until it returns, and the joined promise settles after that.
  assert.equal(addon.live(), 0, 'the joined promise settled while the closure still ran');
  isAbortError(job.error, { reason: 'Dropped', cause: controller.signal.reason });
  assert.equal(typeof job.error.returned, 'number');
  assert.ok(job.error.returned > 0, 'the partial result is missing');
  assert.deepEqual(stopReasons(), ['Dropped: This operation was aborted']);
  // Not cancelled, it resolves with the closure's value.
  assert.equal(typeof (await addon.spinJoined(5, { signal: new AbortController().signal })), 'number');
  await naiveRunsOnAfterAbort((c) => c.abort());
});

test('a bounded grace: the promise waits that long for a closure that ignores its token', async () => {
  const controller = new AbortController();
  const job = track(addon.stubborn(1500, 100, { signal: controller.signal }));
  await running();
  const aborted = performance.now();
  controller.abort();
  await job.done;
  const waited = job.at - aborted;
  assert.ok(waited >= 90 && waited < 1400, `rejected ${waited} ms after the abort, with a grace of 100 ms`);
  isAbortError(job.error, { reason: 'Dropped' });
  assert.equal(job.error.returned, undefined);
  assert.equal(addon.live(), 1, 'the stubborn closure returned early');
  assert.equal(addon.stats().detached, 1, 'the closure left running is not counted detached');
  await waitFor('the stubborn closure to return', () => addon.live() === 0, 3000);
  await waitFor('nothing detached', () => addon.stats().detached === 0, 1000);
});

test('the job\'s own deadline rejects with an AbortError caused by a TimeoutError', async () => {
  addon.takeStops();
  await assert.rejects(addon.spinFor(60_000, 50), (err) => {
    isAbortError(err, { reason: 'Timeout' });
    assert.equal(err.cause.name, 'TimeoutError');
    assert.ok(err.cause instanceof DOMException);
    return true;
  });
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Timeout']);
});

test('one signal serves 100 jobs with one listener, and the caller\'s own onabort stays', async () => {
  addon.takeStops();
  const warnings = [];
  const onWarning = (warning) => warnings.push(warning.name);
  process.on('warning', onWarning);
  const controller = new AbortController();
  let ownHandler = 0;
  controller.signal.onabort = () => { ownHandler += 1; };
  const jobs = Array.from({ length: 100 }, () => track(addon.pulse(60_000, { signal: controller.signal })));
  await running(100);
  // One listener of the addon's, beside the caller's onabort: no MaxListenersExceededWarning.
  assert.equal(getEventListeners(controller.signal, 'abort').length, 2);
  controller.abort();
  await Promise.all(jobs.map((job) => job.done));
  for (const job of jobs) {
    isAbortError(job.error, { cause: controller.signal.reason });
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
  const signal = controller.signal;
  const quick = track(addon.add(1, 2, { signal }));
  const slow = [track(addon.spin(60_000, { signal })), track(addon.spinJoined(60_000, { signal }))];
  await quick.done;
  assert.equal(quick.value, 3);
  await running(2);
  assert.equal(getEventListeners(signal, 'abort').length, 1, 'the first to settle took the listener');
  controller.abort();
  await Promise.all(slow.map((job) => job.done));
  for (const job of slow) {
    isAbortError(job.error, { cause: signal.reason });
  }
  await waitFor('the closures to return', () => addon.live() === 0, 1000);
  assert.equal(getEventListeners(signal, 'abort').length, 0);
  // A fresh job on another signal starts clean.
  const again = new AbortController();
  assert.equal(await addon.add(2, 2, { signal: again.signal }), 4);
  assert.equal(getEventListeners(again.signal, 'abort').length, 0);
  addon.takeStops();
});

test('a cancel from elsewhere (a scope) rejects at once with an AbortError naming it', async () => {
  addon.takeStops();
  const controller = new AbortController();
  // Two run (the scope's bound), the third waits for a slot.
  const jobs = [0, 1, 2].map(() => track(addon.scoped(60_000, { signal: controller.signal })));
  await running(2);
  addon.cancelScoped(false);
  await Promise.all(jobs.map((job) => job.done));
  for (const job of jobs) {
    isAbortError(job.error, { reason: 'Requested' });
    assert.equal(job.error.message, 'The native job was stopped: cancellation was requested');
    assert.equal(job.error.cause.message, 'the scope was cancelled');
  }
  await waitFor('the closures to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), Array(2).fill('Requested: the scope was cancelled'), 'the queued job ran');
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0);

  const timed = track(addon.scoped(60_000));
  await running();
  addon.cancelScoped(true);
  await timed.done;
  isAbortError(timed.error, { reason: 'Timeout' });
  assert.equal(timed.error.cause.name, 'TimeoutError');
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Timeout']);
});

test('a cancel from another thread rejects at once too', async () => {
  addon.takeStops();
  const jobs = [track(addon.scoped(60_000)), track(addon.spinJoined(5))];
  await running(1);
  addon.cancelScopedFromThread(20);
  await jobs[0].done;
  isAbortError(jobs[0].error, { reason: 'Requested' });
  assert.equal(jobs[0].error.cause.message, 'cancelled from another thread');
  await jobs[1].done;
  assert.equal(typeof jobs[1].value, 'number', 'a job outside the scope was touched');
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Requested: cancelled from another thread']);
});

test('an abort after the job finished changes nothing', async () => {
  const controller = new AbortController();
  assert.equal(await addon.add(2, 3, { signal: controller.signal }), 5);
  controller.abort();
  await sleep(10);
  assert.deepEqual(addon.takeStops(), []);
});
