// tethered-mcp.d.mts checked by TypeScript's compiler (the one `npm run build` installs for the
// addon) against test/typed.ts: a server in TypeScript compiles, each tool's `run` gets its own
// schema's argument types, and the mistakes marked `@ts-expect-error` there are refused.

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import process from 'node:process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const TSC = fileURLToPath(new URL('../../node/addon/node_modules/typescript/bin/tsc', import.meta.url));
const PROJECT = fileURLToPath(new URL('./tsconfig.json', import.meta.url));

test('tethered-mcp.d.mts types a server written in TypeScript', () => {
  assert.ok(existsSync(TSC), `no TypeScript compiler at ${TSC}: run \`npm run build\` first`);
  const tsc = spawnSync(process.execPath, [TSC, '-p', PROJECT], { encoding: 'utf8' });
  assert.equal(tsc.status, 0, `tsc failed:\n${tsc.stdout}${tsc.stderr}`);
});
