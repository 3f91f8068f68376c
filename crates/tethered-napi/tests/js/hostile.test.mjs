// Signals and timings a hostile caller would try: hand-made signals that throw or fire while
// being listened to, listeners called twice, aborts racing the closures' returns, a million
// calls on an aborted signal, and jobs started while the process exits.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import { addon, isAbortError, sleep, stopReasons, track, waitFor } from './helpers.mjs';

/** A hand-made signal: an EventTarget with `aborted` and `reason`, and `overrides`. */
function handMade(overrides = {}) {
  const target = new EventTarget();
  return Object.assign(target, { aborted: false, reason: undefined }, overrides);
}

test('a signal whose addEventListener throws: the call rejects with that, nothing starts', async () => {
  const boom = new Error('no listeners here');
  const signal = handMade({ addEventListener() { throw boom; } });
  await assert.rejects(addon.spin(60_000, { signal }), (err) => err === boom);
  await sleep(20);
  assert.equal(addon.live(), 0);
});

test('a signal whose aborted getter throws: the call rejects with that error', async () => {
  const thrown = new Error('no peeking');
  const signal = handMade();
  Object.defineProperty(signal, 'aborted', { get() { throw thrown; } });
  await assert.rejects(addon.spin(60_000, { signal }), (err) => err === thrown);
  const options = { get signal() { throw thrown; } };
  await assert.rejects(addon.spin(60_000, options), (err) => err === thrown);
  assert.equal(addon.live(), 0);
});

/** A hand-made signal that fires with `reason` as soon as a listener is added (and then
 * throws `thenThrow`, if given). */
function firesWhenListened(reason, thenThrow) {
  return handMade({
    addEventListener(type, listener, options) {
      EventTarget.prototype.addEventListener.call(this, type, listener, options);
      this.aborted = true;
      this.reason = reason;
      this.dispatchEvent(new Event('abort'));
      if (thenThrow) {
        throw thenThrow;
      }
    },
  });
}

test('a signal that fires while its listener is being added: rejected, and nothing starts', async () => {
  const before = addon.startedCancelled();
  for (const run of [addon.spin, addon.spinJoined]) {
    const reason = new Error('fired at once');
    const signal = firesWhenListened(reason);
    await assert.rejects(run(60_000, { signal }), (err) => isAbortError(err, { cause: reason }));
    assert.equal(addon.live(), 0, 'the closure ran after its signal fired');
  }
  assert.equal(addon.startedCancelled(), before);
  await waitFor('nothing to run', () => addon.stats().running === 0, 2000);
});

test('a signal that fires while its listener is added, then throws: the abort wins', async () => {
  const reason = new Error('fired, then threw');
  const signal = firesWhenListened(reason, new Error('and then threw'));
  await assert.rejects(addon.spin(60_000, { signal }), (err) => isAbortError(err, { cause: reason }));
  assert.equal(addon.live(), 0);
});

test('a listener called twice settles once', async () => {
  addon.takeStops();
  let added = 0;
  // A broken signal that ignores `once`: its listener runs on every dispatch.
  const signal = handMade({
    addEventListener(type, listener) {
      added += 1;
      EventTarget.prototype.addEventListener.call(this, type, listener);
    },
  });
  const job = track(addon.spin(60_000, { signal }));
  await waitFor('the closure to run', () => addon.live() === 1);
  assert.equal(added, 1);
  signal.aborted = true;
  signal.reason = new Error('twice');
  signal.dispatchEvent(new Event('abort'));
  signal.dispatchEvent(new Event('abort'));
  await job.done;
  isAbortError(job.error, { cause: signal.reason });
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Dropped: twice']);
});

test('aborts racing the closures\' returns: every promise settles once, no listener is left', async () => {
  addon.takeStops();
  const controllers = [];
  const jobs = [];
  for (let i = 0; i < 500; i += 1) {
    const controller = new AbortController();
    controllers.push(controller);
    jobs.push(track(addon.spin(1 + (i % 3), { signal: controller.signal })));
    setTimeout(() => controller.abort(), i % 4);
  }
  await Promise.all(jobs.map((job) => job.done));
  let values = 0;
  let aborts = 0;
  jobs.forEach((job, i) => {
    if (job.error === undefined) {
      values += 1;
      assert.equal(typeof job.value, 'number');
    } else {
      aborts += 1;
      isAbortError(job.error, { cause: controllers[i].signal.reason });
    }
  });
  assert.equal(values + aborts, 500);
  for (const controller of controllers) {
    assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
  }
  await waitFor('every closure to return', () => addon.live() === 0, 5000);
  await waitFor('nothing to run', () => addon.stats().running === 0, 5000);
  addon.takeStops();
});

test('abort at once, from inside another job\'s settle, and from a microtask', async () => {
  const first = new AbortController();
  const second = new AbortController();
  const a = addon.add(1, 2, { signal: first.signal }).then((value) => {
    second.abort();
    return value;
  });
  const b = addon.spin(60_000, { signal: second.signal });
  assert.equal(await a, 3);
  await assert.rejects(b, (err) => isAbortError(err, { cause: second.signal.reason }));

  const third = new AbortController();
  const c = addon.spin(60_000, { signal: third.signal });
  queueMicrotask(() => third.abort());
  await assert.rejects(c, (err) => isAbortError(err, { cause: third.signal.reason }));
  await waitFor('the closures to return', () => addon.live() === 0, 1000);
  addon.takeStops();
});

test('an abort from inside the abort listener of another job on the same signal', async () => {
  const controller = new AbortController();
  const outer = new AbortController();
  // A listener of the caller's, added first, that starts and aborts more work re-entrantly.
  let inner;
  controller.signal.addEventListener('abort', () => {
    inner = addon.spin(60_000, { signal: outer.signal });
    outer.abort(new Error('re-entrant'));
  });
  const job = addon.spin(60_000, { signal: controller.signal });
  await waitFor('the closure to run', () => addon.live() >= 1);
  controller.abort();
  await assert.rejects(job, (err) => isAbortError(err, { cause: controller.signal.reason }));
  await assert.rejects(inner, (err) => isAbortError(err, { cause: outer.signal.reason }));
  await waitFor('the closures to return', () => addon.live() === 0, 1000);
  addon.takeStops();
});

test('reasons that throw when read or turned to text never end the process', async () => {
  const revocable = Proxy.revocable({}, {});
  revocable.revoke();
  const throwingMessage = { get message() { throw new Error('no message for you'); } };
  const noText = 'Dropped: aborted (with a reason that has no text)';
  const cases = [
    // A plain object with no prototype: its JSON.
    [Object.create(null), 'Dropped: {}'],
    [throwingMessage, noText],
    [revocable.proxy, noText],
    [Symbol('why'), 'Dropped: Symbol(why)'],
    // A plain object (its symbol keys are no JSON): its JSON, without asking toPrimitive.
    [{ [Symbol.toPrimitive]() { throw new Error('no'); } }, 'Dropped: {}'],
  ];
  for (const [reason, seen] of cases) {
    for (const run of [addon.spin, addon.spinJoined]) {
      addon.takeStops();
      const controller = new AbortController();
      const job = track(run(60_000, { signal: controller.signal }));
      await waitFor('the closure to run', () => addon.live() === 1);
      controller.abort(reason);
      await job.done;
      isAbortError(job.error, { cause: reason });
      await waitFor('the closure to return', () => addon.live() === 0, 1000);
      assert.deepEqual(stopReasons(), [seen]);
    }
  }
});

test('a hand-made signal whose reason or removeEventListener throws', async () => {
  // Its reason throws when read: the rejection's cause is what was thrown.
  const thrown = new Error('no reason for you');
  const signal = handMade();
  Object.defineProperty(signal, 'reason', { get() { throw thrown; } });
  const job = track(addon.spinJoined(60_000, { signal }));
  await waitFor('the closure to run', () => addon.live() === 1);
  signal.dispatchEvent(new Event('abort'));
  await job.done;
  isAbortError(job.error, { cause: thrown });
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  addon.takeStops();

  // Its removeEventListener throws: a job that finishes still resolves.
  const stubborn = handMade({ removeEventListener() { throw new Error('stuck'); } });
  assert.equal(await addon.add(20, 22, { signal: stubborn }), 42);
});

test('a joined job cancelled by its scope first rejects with the scope\'s reason, not the signal\'s', async () => {
  addon.takeStops();
  const controller = new AbortController();
  const job = track(addon.scopedJoined(60_000, { signal: controller.signal }));
  await waitFor('the closure to run', () => addon.live() === 1);
  addon.cancelScoped(false);
  controller.abort(new Error('too late'));
  await job.done;
  isAbortError(job.error, { reason: 'Requested' });
  assert.equal(job.error.cause.message, 'the scope was cancelled');
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Requested: the scope was cancelled']);
});

test('a million calls on an aborted signal: each rejects, none starts, nothing is kept', async () => {
  const signal = AbortSignal.abort(new Error('gone'));
  const before = addon.startedCancelled();
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  gc();
  const heapBefore = process.memoryUsage().heapUsed;
  let rejected = 0;
  const batch = 10_000;
  for (let round = 0; round < 100; round += 1) {
    const calls = [];
    for (let i = 0; i < batch; i += 1) {
      calls.push(addon.spin(60_000, { signal }).catch((err) => {
        if (err.code === 'ABORT_ERR' && err.cause === signal.reason) rejected += 1;
      }));
    }
    await Promise.all(calls);
  }
  assert.equal(rejected, 1_000_000);
  assert.equal(addon.live(), 0);
  assert.equal(addon.startedCancelled(), before);
  assert.equal(getEventListeners(signal, 'abort').length, 0);
  await sleep(10);
  gc();
  const grown = (process.memoryUsage().heapUsed - heapBefore) / 1e6;
  assert.ok(grown < 20, `the heap grew by ${grown.toFixed(1)} MB over a million rejected calls`);
});
