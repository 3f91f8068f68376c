// The example's README runs as written: its snippet, run ten times against the addon, prints
// the native loop's stop every time (it waits for the loop with `spinJoined`).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { addonPath } from './helpers.mjs';

const readme = readFileSync(new URL('../../../../examples/node/README.md', import.meta.url), 'utf8');

test('the README snippet prints the loop\'s stop, every time', () => {
  const found = readme.match(/node -e '\n([\s\S]*?)\n'\n```/);
  assert.ok(found, 'the README has a `node -e` snippet');
  const script = found[1].replace('require(".")', `require(${JSON.stringify(addonPath)})`);
  for (let run = 0; run < 10; run += 1) {
    const child = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(child.status, 0, child.stderr);
    assert.match(
      child.stdout,
      /^AbortError ABORT_ERR Timeout after 200 ms; the native loop saw: \[\s*\{\s*reason: 'Timeout: The operation was aborted due to timeout',\s*atNs: \d+/,
      `run ${run}: ${child.stdout}`,
    );
  }
});
