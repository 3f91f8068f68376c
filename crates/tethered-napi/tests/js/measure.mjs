// Measurements for the crate's README and BENCHMARKS.md (not a test), each side by side in
// one run. From the repository's root, after `cargo test -p tethered-napi` built the addon:
//
//   TETHERED_NAPI_ADDON=target/napi/tethered_napi_example.node node crates/tethered-napi/tests/js/measure.mjs
//
// 1. abort() to the native loop's return, and to the promise's rejection (100 runs);
// 2. the CPU the process burns in the second after 100 busy jobs are aborted;
// 3. event-loop lag (perf_hooks.monitorEventLoopDelay) while 200 busy jobs run, over 2 s;
// 4. process.exit(), and the event loop emptying after an abort, with 200 busy jobs running.
// Each for tethered-napi's default (its pool), a thread per job (its old default), and
// napi-rs's AsyncTask on libuv's pool where it applies.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { addon, addonPath, sleep, waitFor } from './helpers.mjs';

const RUNS = 100;

function summary(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  return `median ${median.toFixed(3)} ms, worst ${sorted[sorted.length - 1].toFixed(3)} ms`;
}

async function abortToReturn() {
  const toReturn = [];
  const toReject = [];
  addon.takeStops();
  for (let i = 0; i < RUNS; i += 1) {
    const controller = new AbortController();
    const job = addon.spin(60_000, { signal: controller.signal }).catch(() => performance.now());
    await waitFor('the loop to run', () => addon.live() === 1);
    await sleep(1);
    const abortedNs = addon.nowNs();
    const aborted = performance.now();
    controller.abort();
    const rejected = await job;
    await waitFor('the loop to return', () => addon.live() === 0);
    const [stop] = addon.takeStops();
    toReturn.push((stop.atNs - abortedNs) / 1e6);
    toReject.push(rejected - aborted);
  }
  console.log(`abort() -> native return (${RUNS} runs): tethered-napi ${summary(toReturn)}; AsyncTask: never (it runs to its end)`);
  console.log(`abort() -> promise rejected (${RUNS} runs): tethered-napi ${summary(toReject)}`);
}

async function cpuOverOneSecond() {
  const before = process.cpuUsage();
  await sleep(1000);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / 1000;
}

async function burn() {
  const idle = await cpuOverOneSecond();
  const naive = new AbortController();
  const naiveJobs = Array.from({ length: 100 }, () => addon.naiveSpin(120_000, naive.signal).catch(() => {}));
  await waitFor('the pool to run naive loops', () => addon.naiveLive() >= 4, 10_000);
  naive.abort();
  const naiveCpu = await cpuOverOneSecond();
  const naiveLeft = addon.naiveLive();
  addon.stopNaive();
  await Promise.all(naiveJobs);

  const tethered = new AbortController();
  const jobs = Array.from({ length: 100 }, () => addon.spin(120_000, { signal: tethered.signal }).catch(() => {}));
  await waitFor('the pool to run', () => addon.live() === Math.min(100, addon.poolSize()), 30_000);
  tethered.abort();
  const tetheredCpu = await cpuOverOneSecond();
  const tetheredLeft = addon.live();
  await Promise.all(jobs);
  addon.takeStops();
  console.log(`CPU in the second after 100 busy jobs were aborted: AsyncTask ${naiveCpu.toFixed(0)} ms ` +
    `(${naiveLeft} loops still running), tethered-napi ${tetheredCpu.toFixed(0)} ms ` +
    `(${tetheredLeft} running); an idle second: ${idle.toFixed(0)} ms`);
}

/** Event-loop delay while `start()`'s 200 busy jobs run, over 2 s: p50, p99 and max, in ms. */
async function lagWith(label, start, stop) {
  const jobs = start();
  await sleep(200);
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  await sleep(2000);
  histogram.disable();
  await stop(jobs);
  const ms = (ns) => (ns / 1e6).toFixed(1);
  return `${label}: p50 ${ms(histogram.percentile(50))} ms, p99 ${ms(histogram.percentile(99))} ms, max ${ms(histogram.max)} ms`;
}

async function lag() {
  const lines = [];
  lines.push(await lagWith('nothing running', () => [], async () => {}));
  for (const [label, run] of [['tethered-napi (its pool)', addon.spin], ['tethered-napi (a thread per job)', addon.spinThread]]) {
    lines.push(await lagWith(label, () => {
      const controller = new AbortController();
      const promises = Array.from({ length: 200 }, () => run(60_000, { signal: controller.signal }).catch(() => {}));
      return { controller, promises };
    }, async ({ controller, promises }) => {
      controller.abort();
      await Promise.all(promises);
      await waitFor('the loops to return', () => addon.live() === 0, 30_000);
      addon.takeStops();
    }));
  }
  lines.push(await lagWith('AsyncTask (libuv\'s pool)', () => {
    const controller = new AbortController();
    return Array.from({ length: 200 }, () => addon.naiveSpin(60_000, controller.signal).catch(() => {}));
  }, async (promises) => {
    addon.stopNaive();
    // The queued tasks start and end at once (their generation is gone).
    while (addon.naiveLive() > 0) await sleep(5);
    await Promise.race([Promise.all(promises), sleep(5000)]);
    addon.stopNaive();
  }));
  console.log(`event-loop lag with 200 busy jobs (monitorEventLoopDelay over 2 s, ${addon.poolSize()}-thread pool):`);
  for (const line of lines) console.log(`  ${line}`);
}

function exitTimes() {
  const fixture = fileURLToPath(new URL('./fixtures/exit.mjs', import.meta.url));
  console.log('ending the process with 200 busy jobs running, 5 runs each (from process.exit() or the abort to the last `exit` listener; the whole child):');
  for (const mode of ['exit200', 'exit200threads', 'natural200', 'natural200threads']) {
    const inside = [];
    const whole = [];
    for (let i = 0; i < 5; i += 1) {
      const started = performance.now();
      const child = spawnSync(process.execPath, [fixture, addonPath, mode], { encoding: 'utf8', timeout: 60_000 });
      whole.push(performance.now() - started);
      const report = JSON.parse(child.stdout.trim().split('\n').pop());
      inside.push(report.took);
    }
    console.log(`  ${mode}: ${summary(inside)}; the whole child ${summary(whole)}`);
  }
}

console.log(`addon: ${resolve(process.env.TETHERED_NAPI_ADDON)}`);
await abortToReturn();
await burn();
await lag();
exitTimes();
