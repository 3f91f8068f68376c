// Values, errors and panics cross as a JavaScript user expects; a bad signal is refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addon, waitFor } from './helpers.mjs';

test('a value resolves the promise', async () => {
  assert.equal(await addon.add(40, 2), 42);
  assert.equal(await addon.add(1, 2, new AbortController().signal), 3);
  assert.equal(typeof (await addon.spin(5)), 'number');
});

test('an Err rejects with an Error carrying its message', async () => {
  await assert.rejects(addon.fail('no such file'), (err) => {
    assert.ok(err instanceof Error);
    assert.equal(err.message, 'no such file');
    return true;
  });
});

test('a panic rejects with an Error, and the process lives on', async () => {
  const before = addon.stats().panicked;
  await assert.rejects(addon.panics('out of cheese'), (err) => {
    assert.ok(err instanceof Error);
    assert.equal(err.message, 'the native job panicked: out of cheese');
    return true;
  });
  assert.equal(addon.stats().panicked, before + 1);
  assert.equal(await addon.add(1, 1), 2);
});

test('a value whose conversion panics rejects with an Error', async () => {
  await assert.rejects(addon.panickyValue(), /converting the native job's value to JavaScript panicked: this value cannot become JavaScript/);
  assert.equal(await addon.add(2, 2), 4);
});

test('a signal that is no AbortSignal is refused with an error naming it', () => {
  for (const bad of [{}, { aborted: false }, { aborted: 'no', addEventListener() {}, removeEventListener() {} }]) {
    assert.throws(() => addon.spin(5, bad), /the signal must be an AbortSignal/);
  }
  assert.equal(addon.live(), 0, 'a refused call started a closure');
});

test('an aborted signal rejects with its reason and never starts the closure', async () => {
  const spawned = addon.stats().running;
  const controller = new AbortController();
  const reason = new Error('too late');
  controller.abort(reason);
  await assert.rejects(addon.spin(60_000, controller.signal), (err) => err === reason);
  await assert.rejects(addon.spinJoined(60_000, AbortSignal.abort()), { name: 'AbortError' });
  assert.equal(addon.live(), 0);
  assert.deepEqual(addon.takeStops(), []);
  await waitFor('no job to run', () => addon.stats().running <= spawned);
});

test('a job that finished leaves no listener on its signal', async () => {
  const { getEventListeners } = await import('node:events');
  const controller = new AbortController();
  await addon.add(1, 2, controller.signal);
  await addon.fail('x', controller.signal).catch(() => {});
  await addon.panics('x', controller.signal).catch(() => {});
  assert.equal(getEventListeners(controller.signal, 'abort').length, 0);
});
