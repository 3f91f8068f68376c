// Measurements for the crate's README (not a test): run after `cargo test -p tethered-napi`
// built the addon, from the repository's root:
//
//   TETHERED_NAPI_ADDON=target/napi/tethered_napi_example.node node crates/tethered-napi/tests/js/measure.mjs
//
// 1. abort() to the native loop's return, and to the promise's rejection, over 100 runs;
// 2. the CPU the process burns in the second after 100 jobs are aborted, naive AsyncTask
//    against tethered-napi.
import { resolve } from 'node:path';
import { addon, sleep, waitFor } from './helpers.mjs';

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
    const job = addon.spin(60_000, controller.signal).catch(() => performance.now());
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
  console.log(`abort() -> native return (${RUNS} runs): ${summary(toReturn)}`);
  console.log(`abort() -> promise rejected (${RUNS} runs): ${summary(toReject)}`);
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
  const jobs = Array.from({ length: 100 }, () => addon.spin(120_000, tethered.signal).catch(() => {}));
  await waitFor('100 loops to run', () => addon.live() === 100, 30_000);
  tethered.abort();
  const tetheredCpu = await cpuOverOneSecond();
  const tetheredLeft = addon.live();
  await Promise.all(jobs);
  addon.takeStops();
  console.log(`CPU in the second after 100 jobs were aborted: naive AsyncTask ${naiveCpu.toFixed(0)} ms ` +
    `(${naiveLeft} loops still running), tethered-napi ${tetheredCpu.toFixed(0)} ms ` +
    `(${tetheredLeft} running); an idle second: ${idle.toFixed(0)} ms`);
}

console.log(`addon: ${resolve(process.env.TETHERED_NAPI_ADDON)}`);
await abortToReturn();
await burn();
