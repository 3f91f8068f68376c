// The environment going away cancels its running jobs with Shutdown, and never crashes: a
// Worker terminated, the process exiting (process.exit() and the loop emptying).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { addon, addonPath, stopReasons, track, waitFor } from './helpers.mjs';

test('a Worker terminated with jobs running cancels them with Shutdown', async () => {
  addon.takeStops();
  // A job of the main thread, which the Worker's end must leave alone.
  const controller = new AbortController();
  const mine = track(addon.spin(120_000, controller.signal));
  await waitFor('the main thread\'s job to run', () => addon.live() === 1);

  const worker = new Worker(new URL('./fixtures/worker.mjs', import.meta.url), {
    workerData: { addon: addonPath },
  });
  await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  await waitFor('the Worker\'s 12 closures to run', () => addon.live() === 13, 10_000);
  await worker.terminate();
  // The ten pulses and the joined spin saw Shutdown; the stubborn one still sleeps.
  await waitFor('the cancelled closures to return', () => addon.live() === 2, 2000);
  const reasons = stopReasons();
  assert.deepEqual(reasons, Array(11).fill('Shutdown'));
  assert.equal(mine.settled, false, 'the Worker\'s end settled a job of the main thread');
  // The closure that ignores its token keeps its thread, counted, and then returns into a
  // dead environment without touching it.
  assert.ok(addon.stats().running >= 2);
  await waitFor('the stubborn closure to return', () => addon.live() === 1, 5000);

  controller.abort();
  await mine.done;
  assert.equal(mine.error, controller.signal.reason);
  await waitFor('nothing to run', () => addon.stats().running === 0, 2000);
});

function runExit(mode) {
  const started = Date.now();
  const child = spawnSync(process.execPath, [
    fileURLToPath(new URL('./fixtures/exit.mjs', import.meta.url)), addonPath, mode,
  ], { encoding: 'utf8', timeout: 30_000 });
  return { ...child, took: Date.now() - started };
}

test('process.exit() with jobs running cancels them with Shutdown and exits at once', () => {
  const child = runExit('exit');
  assert.equal(child.status, 3, `exit status ${child.status} (signal ${child.signal}):\n${child.stderr}`);
  assert.ok(child.took < 10_000, `exiting took ${child.took} ms`);
  const [late, stops] = child.stdout.trim().split('\n');
  assert.deepEqual(JSON.parse(stops), Array(10).fill('Shutdown'));
  assert.match(late, /the JavaScript environment is shutting down/);
});

test('the loop emptying with a stubborn job left ends the process cleanly', () => {
  const child = runExit('natural');
  assert.equal(child.status, 0, `exit status ${child.status} (signal ${child.signal}):\n${child.stderr}`);
  assert.ok(child.took < 10_000, `exiting took ${child.took} ms`);
  const [late, stops] = child.stdout.trim().split('\n');
  assert.deepEqual(JSON.parse(stops), Array(10).fill('Custom(done here)'));
  assert.match(late, /the JavaScript environment is shutting down/);
});
