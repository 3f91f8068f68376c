// The README's server, as a new user would copy it: written beside the module, spawned by the
// SDK's client over stdio, its tool called, one call timed out by the client, and the session
// closed: the server must exit 0 at once, which it does only when no native loop still runs
// (a 600 s spin that did not stop would keep it past its 2 s deadline: exit 1).

import assert from 'node:assert/strict';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import process from 'node:process';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

import { Lines, SHUTDOWN_WITHIN_MS, waitGone } from './harness.mjs';

const README = fileURLToPath(new URL('../README.md', import.meta.url));
// Beside the module and node_modules, so that the snippet's imports resolve as they would for
// a server in this directory.
const COPY = fileURLToPath(new URL('../readme-server.generated.mjs', import.meta.url));

after(() => rmSync(COPY, { force: true }));

test('the README\'s server serves, and stops its native work when a call ends', async () => {
  const readme = readFileSync(README, 'utf8');
  const section = readme.slice(readme.indexOf('## The glue is a module'));
  const snippet = /```js\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(snippet, 'the README shows a server in a js block');
  writeFileSync(COPY, snippet);

  const transport = new StdioClientTransport({ command: process.execPath, args: [COPY], stderr: 'pipe' });
  const stderr = new Lines(transport.stderr);
  const client = new Client({ name: 'readme', version: '0' });
  await client.connect(transport);
  const pid = transport.pid;

  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((tool) => tool.name), ['spin']);
  const done = await client.callTool({ name: 'spin', arguments: { seconds: 0.05 } });
  assert.equal(done.content[0].text, 'done');
  await assert.rejects(
    client.callTool({ name: 'spin', arguments: { seconds: -1 } }),
    (err) => err.code === -32602,
  );
  // The client gives up after 300 ms: it sends notifications/cancelled, the signal aborts.
  await assert.rejects(client.callTool({ name: 'spin', arguments: { seconds: 600 } }, undefined, { timeout: 300 }));

  const closed = performance.now();
  await client.close();
  await stderr.waitFor(/shut down \(the client closed stdin\) in .*: 0 native jobs running; exit 0/, SHUTDOWN_WITHIN_MS);
  await waitGone(pid);
  assert.ok(performance.now() - closed < SHUTDOWN_WITHIN_MS);
});
