// Values, errors and panics cross as a JavaScript user expects; bad options are refused with a
// TypeError naming them; an aborted signal rejects without starting anything.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';
import { addon, isAbortError, waitFor } from './helpers.mjs';

test('a value resolves the promise', async () => {
  assert.equal(await addon.add(40, 2), 42);
  assert.equal(await addon.add(1, 2, { signal: new AbortController().signal }), 3);
  assert.equal(await addon.add(1, 2, {}), 3);
  assert.equal(await addon.add(1, 2, null), 3);
  assert.equal(await addon.add(1, 2, { signal: null }), 3);
  assert.equal(await addon.add(1, 2, { signal: undefined, other: 'ignored' }), 3);
  assert.equal(typeof (await addon.spin(5)), 'number');
});

test('an Err rejects with an Error carrying its message', async () => {
  await assert.rejects(addon.fail('no such file'), (err) => {
    assert.ok(err instanceof Error);
    assert.equal(err.message, 'no such file');
    return true;
  });
});

test('a panic rejects with ERR_NATIVE_PANIC, and the process lives on', async () => {
  const before = addon.stats().panicked;
  await assert.rejects(addon.panics('out of cheese'), (err) => {
    assert.ok(err instanceof Error);
    assert.equal(err.code, 'ERR_NATIVE_PANIC');
    assert.equal(err.message, 'the native job panicked: out of cheese');
    return true;
  });
  assert.equal(addon.stats().panicked, before + 1);
  assert.equal(await addon.add(1, 1), 2);
});

test('a value whose conversion panics rejects with ERR_NATIVE_PANIC', async () => {
  await assert.rejects(addon.panickyValue(), (err) => {
    assert.equal(err.code, 'ERR_NATIVE_PANIC');
    assert.match(err.message, /converting the native job's value to JavaScript panicked: this value cannot become JavaScript/);
    return true;
  });
  assert.equal(await addon.add(2, 2), 4);
});

test('options that are not an object, and a signal that is no AbortSignal, reject with a TypeError naming them', async () => {
  const badOptions = [5, 'signal', true, Symbol('s')];
  for (const bad of badOptions) {
    await assert.rejects(addon.spin(5, bad), (err) => {
      assert.ok(err instanceof TypeError);
      assert.equal(err.code, 'ERR_INVALID_ARG_TYPE');
      assert.match(err.message, /^The "options" argument must be of type object\. Received /);
      return true;
    });
  }
  const badSignals = [5, 'abort', {}, { aborted: false }, new EventTarget(), () => {}];
  for (const bad of badSignals) {
    await assert.rejects(addon.spin(5, { signal: bad }), (err) => {
      assert.ok(err instanceof TypeError);
      assert.equal(err.code, 'ERR_INVALID_ARG_TYPE');
      assert.match(err.message, /^The "options\.signal" property must be an instance of AbortSignal\. Received /);
      return true;
    });
  }
  assert.equal(addon.live(), 0, 'a refused call started a closure');
});

test('an aborted signal rejects with an AbortError caused by its reason and never starts the closure', async () => {
  const started = addon.startedCancelled();
  const controller = new AbortController();
  const reason = new Error('too late');
  controller.abort(reason);
  await assert.rejects(addon.spin(60_000, { signal: controller.signal }), (err) => isAbortError(err, { reason: 'Dropped', cause: reason }));
  const signal = AbortSignal.abort();
  await assert.rejects(addon.spinJoined(60_000, { signal }), (err) => isAbortError(err, { cause: signal.reason }));
  assert.equal(addon.live(), 0);
  assert.equal(addon.startedCancelled(), started);
  assert.deepEqual(addon.takeStops(), []);
  await waitFor('no job to run', () => addon.stats().running === 0);
});

test('a job that finished leaves no listener on its signal', async () => {
  const controller = new AbortController();
  const signal = controller.signal;
  await addon.add(1, 2, { signal });
  await addon.fail('x', { signal }).catch(() => {});
  await addon.panics('x', { signal }).catch(() => {});
  assert.equal(getEventListeners(signal, 'abort').length, 0);
});
