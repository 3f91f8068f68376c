// The TypeScript SDK's client against the Rust example server (examples/mcp_server.rs, on
// tethered-rmcp), over stdio and streamable HTTP: every way a call ends stops its native job,
// 200 calls with half cancelled leave nothing running, bad input is answered with an error
// while another call goes on. The server is named by TETHERED_MCP_RUST_SERVER (cargo test's
// tests/mcp_examples.rs sets it, and runs this file); without it the tests are skipped, saying
// so. Not a `*.test.mjs`: `npm test` runs this server's own suite.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import process from 'node:process';
import { test } from 'node:test';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { Lines, gone, running, sleep, spinCall, waitGone, waitRunning } from './harness.mjs';

const RUST = process.env.TETHERED_MCP_RUST_SERVER;
const skip = RUST ? false : 'TETHERED_MCP_RUST_SERVER is not set: run through `cargo test --test mcp_examples`';

function newClient() {
  return new Client({ name: 'tethered-rust-server-test', version: '0.1.0' });
}

/** The Rust server over stdio, spawned by the SDK: `client`, `transport`, `stderr`, `pid`. */
async function stdio() {
  const transport = new StdioClientTransport({ command: RUST, args: [], stderr: 'pipe' });
  const stderr = new Lines(transport.stderr);
  const client = newClient();
  await client.connect(transport);
  return { client, transport, stderr, pid: transport.pid };
}

/** The Rust server over HTTP: `url`, `stderr`, `pid`, `stop()`. */
async function httpServer() {
  const child = spawn(RUST, ['--http', '127.0.0.1:0'], { stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = once(child, 'exit');
  const stderr = new Lines(child.stderr);
  const [, url] = await stderr.waitFor(/listening on (http:\S+)/, 10_000);
  return {
    url: new URL(url),
    stderr,
    pid: child.pid,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

async function httpClient(url) {
  const transport = new StreamableHTTPClientTransport(url);
  const client = newClient();
  await client.connect(transport);
  return { client, transport };
}

const STOPPED = /mcp_server: stopped spin \((\w+)\)/;

for (const kind of ['stdio', 'http']) {
  /** A fresh server and a client of it: `client`, `stderr`, `close()`. */
  const open = async () => {
    if (kind === 'stdio') {
      const s = await stdio();
      return { ...s, close: () => s.client.close() };
    }
    const server = await httpServer();
    const { client, transport } = await httpClient(server.url);
    return {
      client,
      transport,
      server,
      stderr: server.stderr,
      async close() {
        await client.close();
        await server.stop();
      },
    };
  };

  test(`${kind}: a call aborted with its signal stops its job`, { skip }, async () => {
    const s = await open();
    try {
      const controller = new AbortController();
      const call = spinCall(s.client, 600, { signal: controller.signal });
      await waitRunning(s.client, 1);
      controller.abort('the user gave up');
      const { error } = await call;
      assert.ok(error, 'the aborted call rejected');
      const [, reason] = await s.stderr.waitFor(STOPPED);
      assert.equal(reason, 'Dropped');
      await waitRunning(s.client, 0);
      const { result } = await spinCall(s.client, 0.01);
      assert.equal(result.content[0].text, 'done');
    } finally {
      await s.close();
    }
  });

  test(`${kind}: a call that times out stops its job`, { skip }, async () => {
    const s = await open();
    try {
      const { error } = await spinCall(s.client, 600, { timeout: 500 });
      assert.match(String(error), /timed out/i);
      await waitRunning(s.client, 0);
    } finally {
      await s.close();
    }
  });

  test(`${kind}: a client that closes stops its job`, { skip }, async () => {
    const s = await open();
    const watcher = kind === 'http' ? (await httpClient(s.server.url)).client : null;
    try {
      spinCall(s.client, 600);
      await waitRunning(s.client, 1);
      const closed = performance.now();
      // Over stdio: the server's stdin ends. Over HTTP: no DELETE (the SDK's `close()` sends
      // none), only the call's connection closed.
      await s.client.close();
      if (watcher) {
        await waitRunning(watcher, 0);
      } else {
        await s.stderr.waitFor(STOPPED);
        await waitGone(s.pid);
      }
      assert.ok(performance.now() - closed < 2000, 'the job ran on after the client closed');
    } finally {
      await watcher?.close();
      await s.server?.stop();
    }
  });

  if (kind === 'http') {
    test('http: a session the client terminates (DELETE) stops its job', { skip }, async () => {
      const server = await httpServer();
      const watcher = (await httpClient(server.url)).client;
      try {
        const { client, transport } = await httpClient(server.url);
        spinCall(client, 600);
        await waitRunning(watcher, 1);
        await transport.terminateSession();
        await waitRunning(watcher, 0);
        await client.close();
      } finally {
        await watcher.close();
        await server.stop();
      }
    });
  }

  test(`${kind}: a killed client stops its job`, { skip }, async () => {
    const script = `
      import { Client } from '@modelcontextprotocol/sdk/client/index.js';
      import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
      import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
      const [kind, where] = process.argv.slice(1);
      const transport = kind === 'http'
        ? new StreamableHTTPClientTransport(new URL(where))
        : new StdioClientTransport({ command: where, args: [], stderr: 'ignore' });
      const client = new Client({ name: 'killed', version: '0' });
      await client.connect(transport);
      client.callTool({ name: 'spin', arguments: { seconds: 600 } }).catch(() => {});
      process.stdout.write('calling ' + (kind === 'http' ? '-' : transport.pid) + '\\n');
      setInterval(() => {}, 60_000);
    `;
    const server = kind === 'http' ? await httpServer() : null;
    const watcher = server ? (await httpClient(server.url)).client : null;
    try {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script, kind, server ? server.url.href : RUST], {
        cwd: new URL('..', import.meta.url),
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const out = new Lines(child.stdout);
      const [, pid] = await out.waitFor(/calling (\S+)/, 10_000);
      if (watcher) await waitRunning(watcher, 1);
      else await sleep(300);
      child.kill('SIGKILL');
      await once(child, 'exit');
      if (watcher) {
        await waitRunning(watcher, 0);
      } else {
        // Its server's stdin ended with it: the server stops the job and exits.
        await waitGone(Number(pid));
        assert.ok(gone(Number(pid)));
      }
    } finally {
      await watcher?.close();
      await server?.stop();
    }
  });

  test(`${kind}: 200 calls, half of them cancelled, leave nothing running`, { skip }, async () => {
    const s = await open();
    try {
      const controllers = Array.from({ length: 100 }, () => new AbortController());
      const toCancel = controllers.map((c) => spinCall(s.client, 600, { signal: c.signal }));
      await waitRunning(s.client, 1, 10_000, { atLeast: true });
      const toFinish = Array.from({ length: 100 }, () => spinCall(s.client, 0.01));
      for (const c of controllers) c.abort();
      const cancelled = await Promise.all(toCancel);
      assert.ok(cancelled.every(({ error }) => error), 'every cancelled call rejected');
      const finished = await Promise.all(toFinish);
      assert.ok(finished.every(({ result }) => result?.content[0].text === 'done'), JSON.stringify(finished.filter(({ result }) => !result)));
      await waitRunning(s.client, 0, 20_000);
    } finally {
      await s.close();
    }
  });

  test(`${kind}: bad input is answered with an error while another call goes on`, { skip }, async () => {
    const s = await open();
    try {
      const controller = new AbortController();
      const call = spinCall(s.client, 600, { signal: controller.signal });
      await waitRunning(s.client, 1);
      for (const bad of [{ seconds: -1 }, { seconds: 'soon' }, {}]) {
        const { result, error } = await s.client
          .callTool({ name: 'spin', arguments: bad })
          .then((result) => ({ result }), (error) => ({ error }));
        assert.ok(error || result.isError, `${JSON.stringify(bad)} was answered as a success`);
      }
      assert.equal(await running(s.client), 1, 'the bad calls touched the running one');
      controller.abort();
      await call;
      await waitRunning(s.client, 0);
    } finally {
      await s.close();
    }
  });
}
