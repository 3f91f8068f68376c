// Values, errors and panics cross as a JavaScript user expects; bad options are refused with a
// TypeError naming them; an aborted signal rejects without starting anything.
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { addon, addonPath, isAbortError, waitFor } from './helpers.mjs';

test('a value resolves the promise', async () => {
  assert.equal(await addon.add(40, 2), 42);
  assert.equal(await addon.add(1, 2, { signal: new AbortController().signal }), 3);
  assert.equal(await addon.add(1, 2, {}), 3);
  assert.equal(await addon.add(1, 2, null), 3);
  assert.equal(await addon.add(1, 2, { signal: null }), 3);
  assert.equal(await addon.add(1, 2, { signal: undefined, other: 'ignored' }), 3);
  assert.equal(typeof (await addon.spin(5)), 'number');
});

test('an Err rejects with napi-rs\'s Error: its message, and its napi status as its code', async () => {
  await assert.rejects(addon.fail('no such file'), (err) => {
    assert.ok(err instanceof Error);
    assert.equal(err.message, 'no such file');
    // `fail` returns `Error::new(Status::InvalidArg, ..)`: tethered-napi.d.ts's `NativeFailure`.
    assert.equal(err.code, 'InvalidArg');
    return true;
  });
});

test('a plain object as the abort reason reaches the native code as its JSON, not [object Object]', async () => {
  addon.takeStops();
  const reasons = [
    [{ code: 'USER_CANCEL', retry: false }, 'Dropped: {"code":"USER_CANCEL","retry":false}'],
    [['a', 1], 'Dropped: ["a",1]'],
    ['plain text', 'Dropped: plain text'],
    [new Error('with a message'), 'Dropped: with a message'],
    [42, 'Dropped: 42'],
  ];
  for (const [reason, seen] of reasons) {
    const controller = new AbortController();
    const joined = addon.spinJoined(60_000, { signal: controller.signal });
    await waitFor('the loop to run', () => addon.live() === 1);
    controller.abort(reason);
    await assert.rejects(joined, (err) => isAbortError(err, { reason: 'Dropped', cause: reason }));
    assert.deepEqual(addon.takeStops().map((stop) => stop.reason), [seen]);
  }
  // A reason that cannot be JSON (a cycle) still has a text.
  const cyclic = { name: 'cycle' };
  cyclic.self = cyclic;
  const controller = new AbortController();
  const joined = addon.spinJoined(60_000, { signal: controller.signal });
  await waitFor('the loop to run', () => addon.live() === 1);
  controller.abort(cyclic);
  await assert.rejects(joined, (err) => isAbortError(err, { cause: cyclic }));
  assert.deepEqual(addon.takeStops().map((stop) => stop.reason), ['Dropped: [object Object]']);
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

/** Runs `script` (an ES module) in a child node with the addon, and gives what it wrote. */
function runChild(script, env = {}) {
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 30_000,
    env: { ...process.env, TETHERED_NAPI_ADDON: addonPath, RUST_BACKTRACE: '1', ...env },
  });
}

const PANICS = `
import { createRequire } from 'node:module';
const addon = createRequire(import.meta.url)(process.env.TETHERED_NAPI_ADDON);
for (let i = 0; i < 3; i += 1) {
  await addon.panics('out of cheese').catch((err) => console.log(err.code, err.message));
}
await addon.panickyValue().catch((err) => console.log(err.code));
`;

test('a panic the addon catches rejects and prints nothing, even with RUST_BACKTRACE=1', () => {
  const child = runChild(PANICS);
  assert.equal(child.status, 0, child.stderr);
  assert.match(child.stdout, /^ERR_NATIVE_PANIC the native job panicked: out of cheese$/m);
  assert.equal(child.stdout.trim().split('\n').length, 4, child.stdout);
  assert.equal(child.stderr, '', 'a caught panic printed on stderr');
});

test('TETHERED_NAPI_PRINT_PANICS=1 prints the caught panics, for debugging', () => {
  const child = runChild(PANICS, { TETHERED_NAPI_PRINT_PANICS: '1' });
  assert.equal(child.status, 0, child.stderr);
  assert.match(child.stderr, /panicked at .*\n.*out of cheese/);
});
