// Signals and timings a hostile caller would try: hand-made signals that throw or fire while
// being listened to, listeners called twice, aborts racing the closures' returns, and jobs
// started while the process exits.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';
import { addon, sleep, stopReasons, track, waitFor } from './helpers.mjs';

/** A hand-made signal: an EventTarget with `aborted` and `reason`, and `overrides`. */
function handMade(overrides = {}) {
  const target = new EventTarget();
  const signal = Object.assign(target, { aborted: false, reason: undefined }, overrides);
  return signal;
}

test('a signal whose addEventListener throws: the call throws that, nothing starts, nothing hangs', async () => {
  const boom = new Error('no listeners here');
  const signal = handMade({ addEventListener() { throw boom; } });
  assert.throws(() => addon.spin(60_000, signal), (err) => err === boom || err.message === boom.message);
  await sleep(20);
  assert.equal(addon.live(), 0);
});

test('a signal whose getter throws is refused with that error', () => {
  const signal = handMade();
  Object.defineProperty(signal, 'aborted', { get() { throw new Error('no peeking'); } });
  assert.throws(() => addon.spin(60_000, signal));
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

test('a signal that fires while its listener is being added', async () => {
  for (const run of [addon.spin, addon.spinJoined]) {
    const reason = new Error('fired at once');
    const signal = firesWhenListened(reason);
    await assert.rejects(run(60_000, signal), (err) => err === reason);
    assert.equal(addon.live(), 0, 'the closure ran after its signal fired');
  }
  await waitFor('nothing to run', () => addon.stats().running === 0, 2000);
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
  const job = track(addon.spin(60_000, signal));
  await waitFor('the closure to run', () => addon.live() === 1);
  assert.equal(added, 1);
  signal.aborted = true;
  signal.reason = new Error('twice');
  signal.dispatchEvent(new Event('abort'));
  signal.dispatchEvent(new Event('abort'));
  await job.done;
  assert.equal(job.error, signal.reason);
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Custom(twice)']);
});

test('aborts racing the closures\' returns: every promise settles once, no listener is left', async () => {
  addon.takeStops();
  const controllers = [];
  const jobs = [];
  for (let i = 0; i < 500; i += 1) {
    const controller = new AbortController();
    controllers.push(controller);
    jobs.push(track(addon.spin(1 + (i % 3), controller.signal)));
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
      assert.equal(job.error, controllers[i].signal.reason);
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
  const a = addon.add(1, 2, first.signal).then((value) => {
    second.abort();
    return value;
  });
  const b = addon.spin(60_000, second.signal);
  assert.equal(await a, 3);
  await assert.rejects(b, (err) => err === second.signal.reason);

  const third = new AbortController();
  const c = addon.spin(60_000, third.signal);
  queueMicrotask(() => third.abort());
  await assert.rejects(c, (err) => err === third.signal.reason);
  await waitFor('the closures to return', () => addon.live() === 0, 1000);
  addon.takeStops();
});

test('reasons that throw when read or turned to text never end the process', async () => {
  const revocable = Proxy.revocable({}, {});
  revocable.revoke();
  const throwingMessage = { get message() { throw new Error('no message for you'); } };
  const cases = [
    [Object.create(null), 'Custom(aborted (with a reason that has no text))'],
    [throwingMessage, 'Custom(aborted (with a reason that has no text))'],
    [revocable.proxy, 'Custom(aborted (with a reason that has no text))'],
    [Symbol('why'), 'Custom(Symbol(why))'],
    [{ [Symbol.toPrimitive]() { throw new Error('no'); } }, 'Custom(aborted (with a reason that has no text))'],
  ];
  for (const [reason, seen] of cases) {
    for (const run of [addon.spin, addon.spinJoined]) {
      addon.takeStops();
      const controller = new AbortController();
      const job = track(run(60_000, controller.signal));
      await waitFor('the closure to run', () => addon.live() === 1);
      controller.abort(reason);
      await job.done;
      assert.equal(job.error, reason);
      await waitFor('the closure to return', () => addon.live() === 0, 1000);
      assert.deepEqual(stopReasons(), [seen]);
    }
  }
});

test('a hand-made signal whose reason or removeEventListener throws', async () => {
  // Its reason throws when read: a joined job reads it when it settles, and rejects with what
  // was thrown.
  const thrown = new Error('no reason for you');
  const signal = handMade();
  Object.defineProperty(signal, 'reason', { get() { throw thrown; } });
  const job = track(addon.spinJoined(60_000, signal));
  await waitFor('the closure to run', () => addon.live() === 1);
  signal.dispatchEvent(new Event('abort'));
  await job.done;
  assert.equal(job.error, thrown);
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  addon.takeStops();

  // Its removeEventListener throws: a job that finishes still resolves.
  const stubborn = handMade({ removeEventListener() { throw new Error('stuck'); } });
  assert.equal(await addon.add(20, 22, stubborn), 42);
});

test('a signal that fires while its listener is added, then throws: the call rejects', async () => {
  const reason = new Error('fired, then threw');
  const signal = firesWhenListened(reason, new Error('and then threw'));
  await assert.rejects(addon.spin(60_000, signal), (err) => err === reason);
  assert.equal(addon.live(), 0);
});

test('a joined job cancelled by its scope first rejects with the scope\'s reason, not the signal\'s', async () => {
  addon.takeStops();
  const controller = new AbortController();
  const job = track(addon.scopedJoined(60_000, controller.signal));
  await waitFor('the closure to run', () => addon.live() === 1);
  addon.cancelScoped(false);
  controller.abort(new Error('too late'));
  await job.done;
  assert.equal(job.error.name, 'AbortError');
  assert.equal(job.error.message, 'the native job was cancelled: the scope was cancelled');
  await waitFor('the closure to return', () => addon.live() === 0, 1000);
  assert.deepEqual(stopReasons(), ['Custom(the scope was cancelled)']);
});
