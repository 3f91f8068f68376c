// tethered-mcp.mjs on its own, with a server of plain JavaScript tools (fixtures/js-tools.mjs)
// and the SDK's own client: each way a call ends aborts its signal, with a reason that says
// which; bad input is a protocol error; SIGTERM stops the calls and the process at once.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import process from 'node:process';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { Lines, running, waitGone, waitRunning } from './harness.mjs';

const SERVER = fileURLToPath(new URL('./fixtures/js-tools.mjs', import.meta.url));

const wait = (client, ms, options = {}) =>
  client.callTool({ name: 'wait', arguments: { ms } }, undefined, options).then((result) => ({ result }), (error) => ({ error }));

async function stops(client) {
  const result = await client.callTool({ name: 'stops', arguments: {} });
  return JSON.parse(result.content[0].text);
}

async function stdio() {
  const transport = new StdioClientTransport({ command: process.execPath, args: [SERVER], stderr: 'pipe' });
  const stderr = new Lines(transport.stderr);
  const client = new Client({ name: 'test', version: '0' });
  await client.connect(transport);
  return { client, transport, stderr, pid: transport.pid };
}

async function http() {
  const child = spawn(process.execPath, [SERVER, '--http', '127.0.0.1:0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = once(child, 'exit');
  const stderr = new Lines(child.stderr);
  const [, url] = await stderr.waitFor(/listening on (http:\S+)/, 10_000);
  const connect = async () => {
    const transport = new StreamableHTTPClientTransport(new URL(url));
    const client = new Client({ name: 'test', version: '0' });
    await client.connect(transport);
    return { client, transport };
  };
  return { child, exited, stderr, connect, pid: child.pid };
}

test('a cancel aborts the call\'s signal, naming the call and the SDK', async () => {
  const s = await stdio();
  try {
    const controller = new AbortController();
    const call = wait(s.client, 600_000, { signal: controller.signal });
    await waitRunning(s.client, 1);
    controller.abort('gave up');
    assert.ok((await call).error);
    await waitRunning(s.client, 0);
    const [stop] = await stops(s.client);
    assert.match(stop, /^wait #\d+: the SDK aborted the request: /);
  } finally {
    await s.client.close();
  }
});

test('the end of stdin aborts every call and ends the server at once', async () => {
  const s = await stdio();
  wait(s.client, 600_000);
  await waitRunning(s.client, 1);
  const closed = performance.now();
  await s.client.close();
  await s.stderr.waitFor(/stopped: wait #\d+: the client closed stdin/);
  await waitGone(s.pid);
  assert.ok(performance.now() - closed < 2000, 'the SDK would have waited 2 s, then sent SIGTERM');
});

test('HTTP: a dropped connection aborts its call; a DELETE aborts the session\'s calls', async () => {
  const server = await http();
  try {
    const watcher = await server.connect();
    const dropped = await server.connect();
    wait(dropped.client, 600_000);
    await waitRunning(watcher.client, 1);
    await dropped.client.close(); // no DELETE: only the call's connection closes
    await waitRunning(watcher.client, 0);
    const deleted = await server.connect();
    wait(deleted.client, 600_000);
    await waitRunning(watcher.client, 1);
    await deleted.transport.terminateSession();
    await waitRunning(watcher.client, 0);
    const seen = await stops(watcher.client);
    assert.match(seen[0], /the client dropped the connection/);
    assert.match(seen[1], /the session was closed/);
    // Else their transports retry the killed server's streams for a minute.
    await deleted.client.close();
    await watcher.client.close();
  } finally {
    server.child.kill('SIGKILL');
    await server.exited;
  }
});

test('bad input is a protocol error, and the server goes on', async () => {
  const s = await stdio();
  try {
    for (const [name, args] of [['wait', { ms: -1 }], ['wait', {}], ['nothing', {}]]) {
      await assert.rejects(s.client.callTool({ name, arguments: args }), (err) => err.code === -32602);
    }
    assert.equal(await running(s.client), 0);
    assert.equal((await wait(s.client, 1)).result.content[0].text, 'done');
  } finally {
    await s.client.close();
  }
});

test('SIGTERM aborts every call, answers them, and exits at once', async () => {
  const server = await http();
  const { client } = await server.connect();
  const call = wait(client, 600_000);
  await waitRunning(client, 1);
  const signalled = performance.now();
  server.child.kill('SIGTERM');
  const { error } = await call;
  assert.match(String(error), /stopped: wait #\d+: the server is shutting down \(SIGTERM\)/);
  const [code] = await server.exited;
  assert.equal(code, 0);
  assert.ok(performance.now() - signalled < 2000);
  await client.close(); // else its transport retries the gone server's stream for a minute
});
