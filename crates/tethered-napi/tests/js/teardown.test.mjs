// The environment going away cancels its running jobs with Shutdown, never crashes, and never
// holds the process up past its bound: a Worker terminated, the process exiting
// (process.exit() and the loop emptying), with a few jobs and with 200 busy ones.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { addon, addonPath, isAbortError, stopReasons, track, waitFor } from './helpers.mjs';

/** The addon's own bound on an exit (its listener waits 100 ms at most for the closures),
 * with room for a slow, shared machine. */
const EXIT_BOUND_MS = 1000;

test('a Worker terminated with jobs running cancels them with Shutdown', async () => {
  addon.takeStops();
  // A job of the main thread, which the Worker's end must leave alone.
  const controller = new AbortController();
  const mine = track(addon.spin(120_000, { signal: controller.signal }));
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
  assert.deepEqual(stopReasons(), Array(11).fill('Shutdown'));
  assert.equal(mine.settled, false, 'the Worker\'s end settled a job of the main thread');
  // The closure that ignores its token keeps its thread, counted, and then returns into a
  // dead environment without touching it.
  assert.ok(addon.stats().running >= 2);
  await waitFor('the stubborn closure to return', () => addon.live() === 1, 5000);

  controller.abort();
  await mine.done;
  isAbortError(mine.error, { cause: controller.signal.reason });
  await waitFor('nothing to run', () => addon.stats().running === 0, 2000);
});

/**
 * A Worker's `terminate()` resolves once its closures that check their token have returned:
 * by then `stats()` counts them out too, not a moment later. (Checked only when `terminate()`
 * took less than the teardown's 100 ms wait: past it, a closure may legitimately still be on
 * its way out.)
 */
test('when terminate() resolves, stats() no longer counts the closures that returned', async () => {
  let checked = 0;
  for (let round = 0; round < 20; round += 1) {
    const worker = new Worker(new URL('./fixtures/pulses.mjs', import.meta.url), {
      workerData: { addon: addonPath },
    });
    await new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    await waitFor('the Worker\'s 4 closures to run', () => addon.live() === 4, 10_000);
    const began = performance.now();
    await worker.terminate();
    const took = performance.now() - began;
    const running = addon.stats().running;
    const live = addon.live();
    if (took < 100) {
      checked += 1;
      assert.equal(live, 0, `round ${round}: a closure that checks its token still runs`);
      assert.equal(running, 0, `round ${round}: stats() still counts a closure that returned (terminate took ${took.toFixed(1)} ms)`);
    }
    await waitFor('nothing to run', () => addon.stats().running === 0, 2000);
  }
  assert.ok(checked > 0, 'every terminate() took its whole teardown grace: nothing was checked');
});

function runExit(mode) {
  const started = Date.now();
  const child = spawnSync(process.execPath, [
    fileURLToPath(new URL('./fixtures/exit.mjs', import.meta.url)), addonPath, mode,
  ], { encoding: 'utf8', timeout: 30_000 });
  const took = Date.now() - started;
  const line = child.stdout.trim().split('\n').pop();
  let report;
  try {
    report = JSON.parse(line);
  } catch {
    assert.fail(`no report from the child (status ${child.status}, signal ${child.signal}):\n${child.stdout}\n${child.stderr}`);
  }
  return { ...child, took, report };
}

test('process.exit() with jobs running cancels them with Shutdown and exits at once', () => {
  const child = runExit('exit');
  assert.equal(child.status, 3, `exit status ${child.status} (signal ${child.signal}):\n${child.stderr}`);
  assert.deepEqual(child.report.stops, Array(10).fill('Shutdown'));
  assert.match(child.report.late, /ERR_NATIVE_CLOSING/);
  assert.ok(child.report.took < EXIT_BOUND_MS, `the exit took ${child.report.took} ms`);
});

test('the loop emptying with a stubborn job left ends the process cleanly', () => {
  const child = runExit('natural');
  assert.equal(child.status, 0, `exit status ${child.status} (signal ${child.signal}):\n${child.stderr}`);
  assert.deepEqual(child.report.stops, Array(10).fill('Dropped: done here'));
  assert.match(child.report.late, /ERR_NATIVE_CLOSING/);
  assert.ok(child.report.took < EXIT_BOUND_MS, `the exit took ${child.report.took} ms`);
});

test('200 busy jobs: process.exit() and the loop emptying both end within the bound', () => {
  const exited = runExit('exit200');
  assert.equal(exited.status, 3, `exit status ${exited.status}:\n${exited.stderr}`);
  assert.ok(exited.report.stops.every((stop) => stop === 'Shutdown'));
  assert.ok(exited.report.took < EXIT_BOUND_MS, `process.exit() took ${exited.report.took} ms`);
  const ended = runExit('natural200');
  assert.equal(ended.status, 0, `exit status ${ended.status}:\n${ended.stderr}`);
  assert.ok(ended.report.stops.every((stop) => stop === 'Dropped: done here'));
  assert.ok(ended.report.took < EXIT_BOUND_MS, `the loop took ${ended.report.took} ms to end`);
});
