// The time from the client's cancel to the native loop's return, per transport: for each of
// ROUNDS calls, a `spin` runs, the test aborts its signal (the SDK's client sends
// `notifications/cancelled`) and notes the time, and the server's stderr says when the native
// loop returned (the addon's `takeStops()`, on the same CLOCK_MONOTONIC clock as
// `process.hrtime.bigint()` here). Prints
//   mcp-node cancel-to-return <transport>: median X ms, worst Y ms over N calls
// The only bound is behavioural (a median under 100 ms: the loop stopped on the cancel, not at
// its end an hour later).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

import { TRANSPORTS, spinCall, waitRunning } from './harness.mjs';

const ROUNDS = 50;

// Where BENCHMARKS.md's generator (crates/benchmarks/report.py) reads the results.
const RESULTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'target', 'tethered-bench', 'mcp-node.json');
const SDK_VERSION = JSON.parse(readFileSync(join(dirname(fileURLToPath(import.meta.url)), '..', 'package.json'), 'utf8')).dependencies['@modelcontextprotocol/sdk'];

/** Adds one transport's result to RESULTS (a list, one entry per transport). */
function record(entry) {
  let results = [];
  try {
    results = JSON.parse(readFileSync(RESULTS, 'utf8')).filter((r) => r.transport !== entry.transport);
  } catch {
    // No results yet.
  }
  mkdirSync(dirname(RESULTS), { recursive: true });
  writeFileSync(RESULTS, `${JSON.stringify([...results, entry])}\n`);
}

function percentile(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

for (const [name, open] of Object.entries(TRANSPORTS)) {
  describe(`${name}: cancel to return`, () => {
    it(`measured over ${ROUNDS} calls`, { timeout: 120_000 }, async () => {
      const s = await open();
      try {
        const samples = [];
        for (let i = 0; i < ROUNDS; i++) {
          const tag = `measure-${name}-${i}`;
          const cancel = new AbortController();
          const call = spinCall(s.client, 3600, { signal: cancel.signal });
          await waitRunning(s.client, 1);
          const cancelledAt = process.hrtime.bigint();
          cancel.abort(tag);
          const [, returnedAt] = await s.stderr.waitFor(new RegExp(`stopped \\(Dropped: spin #\\d+: the SDK aborted the request: ${tag}\\) at (\\d+)`));
          samples.push(Number(BigInt(returnedAt) - cancelledAt) / 1e6);
          assert.ok((await call).error);
          await waitRunning(s.client, 0);
        }
        const sorted = samples.toSorted((a, b) => a - b);
        const median = percentile(sorted, 50);
        const worst = sorted.at(-1);
        const line = `mcp-node cancel-to-return ${name}: median ${median.toFixed(3)} ms, ` +
          `p90 ${percentile(sorted, 90).toFixed(3)} ms, worst ${worst.toFixed(3)} ms over ${ROUNDS} calls`;
        console.log(line);
        record({
          language: 'Node', sdk: `@modelcontextprotocol/sdk ${SDK_VERSION}`,
          transport: name === 'http' ? 'streamable HTTP' : 'stdio', build: 'release (addon)',
          calls: ROUNDS, median_ms: median, worst_ms: worst,
        });
        assert.ok(sorted[0] > 0, 'the loop returned after the cancel');
        assert.ok(median < 100, line);
      } finally {
        await s.close();
      }
    });
  });
}
