// Every way a call can end stops its native job, on both transports: the client's cancel
// (`notifications/cancelled`), the client's request timeout, the client closing the session,
// the client process killed, the server shut down (SIGTERM). Each test checks that the job
// ran before the ending (the `running` tool says 1), that it stopped after (`running` says 0,
// within STOP_WITHIN_MS), and which reason the native loop saw (the server's stderr).

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import process from 'node:process';

import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';

import {
  connectHttp,
  KILLED_CLIENT,
  Lines,
  reap,
  SHUTDOWN_WITHIN_MS,
  spinCall,
  startHttpServer,
  startStdio,
  waitGone,
  waitRunning,
} from './harness.mjs';

/** One server and one client of it, on either transport. */
const TRANSPORTS = {
  async stdio() {
    const s = await startStdio();
    return { ...s, close: () => s.client.close() };
  },
  async http() {
    const server = await startHttpServer();
    const { client, transport } = await connectHttp(server.url);
    return {
      client,
      transport,
      server,
      stderr: server.stderr,
      pid: server.pid,
      exited: server.exited,
      async close() {
        await client.close();
        await server.stop();
      },
    };
  },
};

/** A call of `tool` that runs until it is stopped. */
function endlessCall(client, tool, options) {
  const args = tool === 'spin' ? { seconds: 3600 } : { code: 'while (true) {}' };
  return client
    .callTool({ name: tool, arguments: args }, undefined, options)
    .then((result) => ({ result }), (error) => ({ error }));
}

for (const [name, open] of Object.entries(TRANSPORTS)) {
  describe(`${name}: the client ends the call`, () => {
    for (const tool of ['spin', 'sandbox']) {
      it(`notifications/cancelled stops ${tool}'s native job`, async () => {
        const s = await open();
        try {
          const cancel = new AbortController();
          const call = endlessCall(s.client, tool, { signal: cancel.signal });
          await waitRunning(s.client, 1);
          cancel.abort(`the test cancels ${tool}`);
          const { error } = await call;
          assert.ok(error, 'the call was cancelled');
          await waitRunning(s.client, 0);
          await s.stderr.waitFor(
            new RegExp(`stopped \\(Dropped: ${tool} #\\d+: the SDK aborted the request: the test cancels ${tool}\\)`),
          );
          // The server goes on serving.
          assert.deepEqual((await spinCall(s.client, 0.01)).result?.content, [{ type: 'text', text: 'done' }]);
        } finally {
          await s.close();
        }
      });
    }

    it('the request timeout stops the native job', async () => {
      const s = await open();
      try {
        const call = spinCall(s.client, 3600, { timeout: 3000 });
        await waitRunning(s.client, 1);
        const { error } = await call;
        assert.equal(error?.code, ErrorCode.RequestTimeout);
        await waitRunning(s.client, 0);
        await s.stderr.waitFor(/stopped \(Dropped: spin #\d+: the SDK aborted the request: .*Request timed out\)/);
      } finally {
        await s.close();
      }
    });

    it('SIGTERM stops every native job, answers the calls and exits 0 within the deadline', async () => {
      const s = await open();
      try {
        // More calls than the addon's pool has threads: some run, the others wait their turn.
        const calls = [spinCall(s.client, 3600), spinCall(s.client, 3600), spinCall(s.client, 3600)];
        await waitRunning(s.client, 1, undefined, { atLeast: true });
        const sent = performance.now();
        process.kill(s.pid, 'SIGTERM');
        const exit = await Promise.race([
          s.exited,
          new Promise((resolve) => setTimeout(resolve, SHUTDOWN_WITHIN_MS, 'late')),
        ]);
        assert.deepEqual(exit, { code: 0, signal: null }, 'exit 0 within the deadline');
        const tookMs = performance.now() - sent;
        for (const { error } of await Promise.all(calls)) {
          assert.match(String(error?.message), /shutting down \(SIGTERM\)|Connection closed/);
        }
        await s.stderr.waitFor(/stopped \(Dropped: spin #\d+: the server is shutting down \(SIGTERM\)\)/);
        await s.stderr.waitFor(/shut down \(the server is shutting down \(SIGTERM\)\) in [\d.]+ ms: 0 native jobs running; exit 0/);
        assert.ok(tookMs < SHUTDOWN_WITHIN_MS, `exited in ${tookMs} ms`);
      } finally {
        await s.close().catch(() => {});
        reap(s.pid);
      }
    });
  });
}

describe('stdio: the client goes away', () => {
  it('closing the session (stdin ends) stops the native job, and the server exits 0', async () => {
    const s = await startStdio();
    try {
      const call = spinCall(s.client, 3600);
      await waitRunning(s.client, 1);
      const started = performance.now();
      await s.client.close();
      const closeMs = performance.now() - started;
      // StdioClientTransport.close() ends stdin, then waits 2 s before it sends SIGTERM: a
      // server that exits by itself lets it return sooner.
      assert.ok(closeMs < 2000, `the server exited by itself (close took ${closeMs} ms)`);
      assert.deepEqual(await s.exited, { code: 0, signal: null });
      assert.ok((await call).error, 'the call failed with the connection');
      assert.ok(s.stderr.find(/stopped \(Dropped: spin #\d+: the client closed stdin\)/), s.stderr.lines.join('\n'));
      assert.ok(s.stderr.find(/shut down \(the client closed stdin\) in [\d.]+ ms: 0 native jobs running; exit 0/));
    } finally {
      reap(s.pid);
    }
  });

  it('the client killed (stdin ends) stops the native job, and the server exits 0', async () => {
    const client = spawn(process.execPath, [KILLED_CLIENT, 'stdio'], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out = new Lines(client.stdout);
    // The server inherited the client's stderr: its lines come here, also after the kill.
    const serverErr = new Lines(client.stderr);
    let serverPid;
    try {
      const [, pid] = await out.waitFor(/^ready (\d+)$/, 15_000);
      serverPid = Number(pid);
      client.kill('SIGKILL');
      await once(client, 'exit');
      await serverErr.waitFor(/stopped \(Dropped: spin #\d+: the client closed stdin\)/);
      await serverErr.waitFor(/shut down \(the client closed stdin\) in [\d.]+ ms: 0 native jobs running; exit 0/);
      await waitGone(serverPid);
    } finally {
      client.kill('SIGKILL');
      reap(serverPid);
    }
  });
});

describe('http: the client goes away', () => {
  /** A server, the client `a` that runs the call, and a second client `b` that watches. */
  async function setUp() {
    const server = await startHttpServer();
    const a = await connectHttp(server.url);
    const b = await connectHttp(server.url);
    const tearDown = async () => {
      await a.client.close().catch(() => {});
      await b.client.close().catch(() => {});
      await server.stop();
    };
    return { server, a, b, tearDown };
  }

  it('deleting the session (terminateSession) stops the native job', async () => {
    const { server, a, b, tearDown } = await setUp();
    try {
      spinCall(a.client, 3600);
      await waitRunning(b.client, 1);
      await a.transport.terminateSession();
      await waitRunning(b.client, 0);
      await server.stderr.waitFor(/stopped \(Dropped: spin #\d+: the session was closed\)/);
    } finally {
      await tearDown();
    }
  });

  it('closing the client without a DELETE (its connections drop) stops the native job', async () => {
    const { server, a, b, tearDown } = await setUp();
    try {
      const call = spinCall(a.client, 3600);
      await waitRunning(b.client, 1);
      await a.client.close();
      assert.ok((await call).error, 'the call failed with the connection');
      await waitRunning(b.client, 0);
      await server.stderr.waitFor(/stopped \(Dropped: spin #\d+: the client dropped the connection\)/);
    } finally {
      await tearDown();
    }
  });

  it('the client killed (its connections drop) stops the native job', async () => {
    const { server, b, tearDown } = await setUp();
    const client = spawn(process.execPath, [KILLED_CLIENT, 'http', server.url.href], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      const out = new Lines(client.stdout);
      await out.waitFor(/^ready -$/, 15_000);
      await waitRunning(b.client, 1);
      client.kill('SIGKILL');
      await once(client, 'exit');
      await waitRunning(b.client, 0);
      await server.stderr.waitFor(/stopped \(Dropped: spin #\d+: the client dropped the connection\)/);
    } finally {
      client.kill('SIGKILL');
      await tearDown();
    }
  });
});
