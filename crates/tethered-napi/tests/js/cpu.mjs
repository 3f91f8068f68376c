// CPU per call beside wall time per call, each side alone in its own process (not a test:
// `node --test` runs the *.test.mjs files only). Paired rounds in one process (peers.mjs)
// share the process's CPU clock between the two sides, and one side's idle workers spinning
// into the other's batch would be charged to it: here each run is one side, one process.
//
//   TETHERED_NAPI_ADDON=target/napi/tethered_napi_example.node node crates/tethered-napi/tests/js/cpu.mjs [--calls=N] [--runs=K] [--load]
//
// Each run awaits N trivial calls one after another (`a + b`: tethered `add` on the addon's
// pool, napi-rs `AsyncTask` on libuv's) after 2,000 warm-up calls, and reads the wall clock
// and `process.cpuUsage()` (user + system, every thread of the process) around them. The
// sides alternate over K runs; the table gives each side's median wall and CPU time per call
// and tethered's ratios to the peer. With --load, as many busy processes as the machine has
// cores run throughout (a loaded machine). Results: target/tethered-bench/cpu-napi.json.
import { spawn, spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..', '..', '..');

function option(name, fallback) {
  const arg = process.argv.slice(2).find((a) => a.startsWith(`--${name}=`));
  const value = arg === undefined ? fallback : Number(arg.split('=')[1]);
  if (!Number.isInteger(value) || value < 1) throw new Error(`--${name} wants a positive integer, got ${arg}`);
  return value;
}

const SIDES = {
  'tethered': (addon, i) => addon.add(i, 1),
  'tethered-signal': (addon, i, controller) => addon.add(i, 1, { signal: controller.signal }),
  'asynctask': (addon, i) => addon.addAsyncTask(i, 1),
  'asynctask-signal': (addon, i, controller) => addon.addAsyncTask(i, 1, controller.signal),
};

const side = process.argv.slice(2).find((a) => a.startsWith('--side='))?.split('=')[1];
if (side !== undefined) {
  // One run of one side, in this process.
  const { addon } = await import('./helpers.mjs');
  const call = SIDES[side];
  if (call === undefined) throw new Error(`--side must be one of ${Object.keys(SIDES).join(', ')}`);
  const calls = option('calls', 20_000);
  const controller = new AbortController();
  for (let i = 0; i < 2_000; i += 1) await call(addon, i, controller);
  const cpu = process.cpuUsage();
  const started = process.hrtime.bigint();
  let sum = 0;
  for (let i = 0; i < calls; i += 1) sum += await call(addon, i, controller);
  const wall = Number(process.hrtime.bigint() - started) / 1000;
  const used = process.cpuUsage(cpu);
  if (sum !== (calls * (calls - 1)) / 2 + calls) throw new Error(`the calls summed to ${sum}`);
  console.log(JSON.stringify({ side, wall_us: wall / calls, cpu_us: (used.user + used.system) / calls }));
  process.exit(0);
}

const CALLS = option('calls', 20_000);
const LOAD = process.argv.includes('--load');
// A loaded machine's runs fall into modes (where the scheduler puts the threads against the
// busy processes), for either side: more runs, and every run's time in the results.
const RUNS = option('runs', LOAD ? 9 : 5);

/** Each run's wall time per call, in order, to a tenth of a microsecond. */
function walls(runs) {
  return runs.map((s) => Math.round(s.wall_us * 10) / 10).sort((a, b) => a - b);
}

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

const load = [];
if (LOAD) {
  for (let i = 0; i < availableParallelism(); i += 1) {
    load.push(spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
  }
}
const samples = Object.fromEntries(Object.keys(SIDES).map((name) => [name, []]));
try {
  for (let run = 0; run < RUNS; run += 1) {
    const order = run % 2 === 0 ? Object.keys(SIDES) : Object.keys(SIDES).reverse();
    for (const name of order) {
      const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url), `--side=${name}`, `--calls=${CALLS}`], {
        encoding: 'utf8',
        env: process.env,
      });
      if (child.status !== 0) throw new Error(`${name} failed: ${child.stderr}`);
      samples[name].push(JSON.parse(child.stdout.trim().split('\n').pop()));
    }
  }
} finally {
  for (const child of load) child.kill('SIGKILL');
}

const rows = [];
for (const [tethered, peer, measured] of [
  ['tethered', 'asynctask', 'call → resolve, no signal'],
  ['tethered-signal', 'asynctask-signal', 'call → resolve with a live `{ signal }`'],
]) {
  const wall = median(samples[tethered].map((s) => s.wall_us));
  const cpu = median(samples[tethered].map((s) => s.cpu_us));
  const peerWall = median(samples[peer].map((s) => s.wall_us));
  const peerCpu = median(samples[peer].map((s) => s.cpu_us));
  rows.push({ measured, machine: LOAD ? 'loaded' : 'idle', wall_us: wall, cpu_us: cpu, peer_wall_us: peerWall, peer_cpu_us: peerCpu,
    wall_ratio: wall / peerWall, cpu_ratio: cpu / peerCpu, runs: RUNS, calls: CALLS,
    wall_runs: walls(samples[tethered]), peer_wall_runs: walls(samples[peer]) });
}
for (const r of rows) {
  console.log(`${r.measured} (${r.machine}): wall ${r.wall_us.toFixed(2)} µs vs ${r.peer_wall_us.toFixed(2)} µs (${r.wall_ratio.toFixed(3)}x), ` +
    `CPU ${r.cpu_us.toFixed(2)} µs vs ${r.peer_cpu_us.toFixed(2)} µs (${r.cpu_ratio.toFixed(3)}x), median of ${RUNS} runs of ${CALLS} calls; ` +
    `runs ${r.wall_runs[0]}–${r.wall_runs.at(-1)} µs vs ${r.peer_wall_runs[0]}–${r.peer_wall_runs.at(-1)} µs`);
}
const output = resolve(root, 'target', 'tethered-bench', `cpu-napi${LOAD ? '-loaded' : ''}.json`);
mkdirSync(dirname(output), { recursive: true });
writeFileSync(output, `${JSON.stringify(rows, null, 2)}\n`);
console.log(`wrote ${relative(root, output)}`);
