// tethered-napi against what a napi-rs user would write instead, paired in one run (not a
// test: `node --test` runs the *.test.mjs files only). From the repository's root, after
// `cargo test -p tethered-napi --test node` built the addon (or the same build by hand:
// `CARGO_TARGET_DIR=target/napi cargo build --release -p tethered-napi-example`, then
// `cp target/napi/release/libtethered_napi_example.so target/napi/tethered_napi_example.node`):
//
//   TETHERED_NAPI_ADDON=target/napi/tethered_napi_example.node node crates/tethered-napi/tests/js/peers.mjs
//
// (`--rounds=N` and `--batch=B` change the defaults, 200 and 64.) What is measured is the
// latency a caller awaits: a call to a trivial native job (`a + b`) until its promise resolves.
// 1. no signal: `add(a, b)` (a tethered job, on the addon's pool) against `addAsyncTask(a, b)`
//    (napi-rs's `AsyncTask`, the same sum in `compute`, on libuv's pool);
// 2. with a live signal (one AbortController per batch, never aborted): `add(a, b, { signal })`
//    against `addAsyncTask(a, b, signal)` (`AsyncTask::with_optional_signal`).
// Pairing: after warm-up rounds, each round times a batch of B calls of each side, each call
// awaited before the next (one in flight: the latency, not the throughput), tethered first in
// even rounds and the peer first in odd ones; the round's ratio is tethered's batch time over
// the peer's. The table and target/tethered-bench/peers-napi.json give the median ratio with its
// quartiles over the rounds, and each side's median time per call.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { addon, addonPath } from './helpers.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..', '..', '..');
const output = resolve(root, 'target', 'tethered-bench', 'peers-napi.json');

function option(name, fallback) {
  const arg = process.argv.slice(2).find((a) => a.startsWith(`--${name}=`));
  const value = arg === undefined ? fallback : Number(arg.split('=')[1]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} wants a positive integer, got ${arg}`);
  return value;
}

const ROUNDS = option('rounds', 200);
const BATCH = option('batch', 64);
const WARMUP_ROUNDS = 20;
const GOAL = 1.1;

/** The q-quantile of `values`, interpolated between the nearest ranks. */
function quantile(values, q) {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  const high = Math.min(low + 1, sorted.length - 1);
  return sorted[low] + (sorted[high] - sorted[low]) * (at - low);
}

/**
 * Times `BATCH` calls of `call(i, context)`, each awaited before the next, in nanoseconds;
 * `context()` (made before the clock starts) is what every call of the batch shares.
 */
async function batch(call, context) {
  const shared = context();
  let sum = 0;
  const started = process.hrtime.bigint();
  for (let i = 0; i < BATCH; i += 1) {
    sum += await call(i, shared);
  }
  const took = Number(process.hrtime.bigint() - started);
  // Each call adds 1 to i: a wrong sum means a side did not do the work.
  const want = (BATCH * (BATCH - 1)) / 2 + BATCH;
  if (sum !== want) throw new Error(`a batch summed to ${sum}, not ${want}`);
  return took;
}

/** Runs the rounds of one row: tethered and its peer side by side, the order alternating. */
async function paired({ tethered, peer, context }) {
  const ratios = [];
  const thisNs = [];
  const peerNs = [];
  for (let round = -WARMUP_ROUNDS; round < ROUNDS; round += 1) {
    let a;
    let b;
    if (round % 2 === 0) {
      a = await batch(tethered, context);
      b = await batch(peer, context);
    } else {
      b = await batch(peer, context);
      a = await batch(tethered, context);
    }
    if (round < 0) continue;
    ratios.push(a / b);
    thisNs.push(a / BATCH);
    peerNs.push(b / BATCH);
  }
  return {
    rounds: ROUNDS,
    ratio_median: quantile(ratios, 0.5),
    ratio_q1: quantile(ratios, 0.25),
    ratio_q3: quantile(ratios, 0.75),
    this_us: quantile(thisNs, 0.5) / 1000,
    peer_us: quantile(peerNs, 0.5) / 1000,
  };
}

const noContext = () => undefined;
const liveSignal = () => new AbortController();

const ROWS = [
  {
    measured: 'call → resolve, no signal',
    peer: 'napi-rs `AsyncTask` (libuv\'s pool)',
    tethered: (i) => addon.add(i, 1),
    peer_call: (i) => addon.addAsyncTask(i, 1),
    context: noContext,
  },
  {
    measured: 'call → resolve with a live `{ signal }`',
    peer: 'napi-rs `AsyncTask::with_optional_signal` (libuv\'s pool)',
    tethered: (i, controller) => addon.add(i, 1, { signal: controller.signal }),
    peer_call: (i, controller) => addon.addAsyncTask(i, 1, controller.signal),
    context: liveSignal,
  },
];

const args = process.argv.slice(2).join(' ');
const command = `TETHERED_NAPI_ADDON=${relative(root, addonPath)} node ${relative(root, fileURLToPath(import.meta.url))}${args ? ` ${args}` : ''}`;
const libuvThreads = process.env.UV_THREADPOOL_SIZE ?? '4';
const notes = `${BATCH} calls awaited one after another per batch and side, order alternating each round, ${WARMUP_ROUNDS} warm-up rounds; ` +
  `the addon's pool has ${addon.poolSize()} threads, libuv's ${libuvThreads}; Node ${process.version}`;

console.log(`addon: ${addonPath}`);
console.log(`${ROUNDS} rounds of ${BATCH} awaited calls per side, order alternating (${notes})`);
const results = [];
for (const row of ROWS) {
  const measured = await paired({ tethered: row.tethered, peer: row.peer_call, context: row.context });
  results.push({
    crate: 'napi',
    measured: row.measured,
    peer: row.peer,
    goal: '≤ 1.10×',
    goal_ratio: GOAL,
    ...measured,
    command,
    notes,
  });
}

const header = ['measured', 'peer', 'this µs', 'peer µs', 'ratio (q1–q3)', 'goal'];
const lines = results.map((r) => [
  r.measured,
  r.peer,
  r.this_us.toFixed(2),
  r.peer_us.toFixed(2),
  `${r.ratio_median.toFixed(3)}× (${r.ratio_q1.toFixed(3)}–${r.ratio_q3.toFixed(3)})`,
  `${r.goal} ${r.ratio_median <= r.goal_ratio ? 'met' : 'MISSED'}`,
]);
const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
for (const line of [header, ...lines]) {
  console.log(line.map((cell, i) => cell.padEnd(widths[i])).join('  '));
}

mkdirSync(dirname(output), { recursive: true });
writeFileSync(output, `${JSON.stringify(results, null, 2)}\n`);
console.log(`wrote ${relative(root, output)}`);
