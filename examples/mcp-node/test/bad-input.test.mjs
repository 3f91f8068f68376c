// Bad input is answered with a protocol error, never a hang or a crash, while other calls go
// on: unknown tools and bad arguments through the SDK's client (on both transports), invalid
// JSON-RPC written raw to the server's stdin, and raw bad bodies POSTed over HTTP.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import process from 'node:process';

import { ErrorCode, LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

import { connectHttp, Lines, SERVER, spinCall, startHttpServer, startStdio, waitRunning } from './harness.mjs';

/** [what, tools/call params]: each is answered with -32602 invalid params. */
const BAD_CALLS = [
  ['an unknown tool', { name: 'no-such-tool', arguments: {} }],
  ['no arguments for spin', { name: 'spin' }],
  ['seconds missing', { name: 'spin', arguments: {} }],
  ['seconds a string', { name: 'spin', arguments: { seconds: '5' } }],
  ['seconds a boolean', { name: 'spin', arguments: { seconds: true } }],
  ['seconds null', { name: 'spin', arguments: { seconds: null } }],
  ['seconds an object', { name: 'spin', arguments: { seconds: { value: 1 } } }],
  ['seconds an array', { name: 'spin', arguments: { seconds: [1] } }],
  ['seconds NaN (sent as null)', { name: 'spin', arguments: { seconds: Number.NaN } }],
  ['seconds Infinity (sent as null)', { name: 'spin', arguments: { seconds: Number.POSITIVE_INFINITY } }],
  ['seconds negative', { name: 'spin', arguments: { seconds: -1 } }],
  ['seconds a hair below zero', { name: 'spin', arguments: { seconds: -1e-9 } }],
  ['seconds above 3600', { name: 'spin', arguments: { seconds: 3600.001 } }],
  ['seconds huge', { name: 'spin', arguments: { seconds: 1e308 } }],
  ['an unknown argument', { name: 'spin', arguments: { seconds: 1, extra: true } }],
  ['code missing', { name: 'sandbox', arguments: {} }],
  ['code a number', { name: 'sandbox', arguments: { code: 5 } }],
  ['code too long', { name: 'sandbox', arguments: { code: 'x'.repeat(100_001) } }],
  ['numeric code out of range', { name: 'sandbox', arguments: { code: '-1' } }],
  ['numeric code too long a duration', { name: 'sandbox', arguments: { code: '1e9' } }],
  ['arguments to running', { name: 'running', arguments: { all: true } }],
];

const TRANSPORTS = {
  async stdio() {
    const s = await startStdio();
    return { client: s.client, close: () => s.client.close() };
  },
  async http() {
    const server = await startHttpServer();
    const { client } = await connectHttp(server.url);
    return {
      client,
      async close() {
        await client.close();
        await server.stop();
      },
    };
  },
};

for (const [name, open] of Object.entries(TRANSPORTS)) {
  describe(`${name}: bad calls through the SDK's client`, () => {
    it('each is an invalid-params error, while a call runs on and the server answers', async () => {
      const s = await open();
      try {
        const meanwhile = spinCall(s.client, 1);
        await waitRunning(s.client, 1);
        const answers = await Promise.all(
          BAD_CALLS.map(([what, params]) =>
            s.client.callTool(params).then(
              (result) => ({ what, result }),
              (error) => ({ what, error }),
            ),
          ),
        );
        for (const { what, result, error } of answers) {
          assert.equal(error?.code, ErrorCode.InvalidParams, `${what}: ${error ?? JSON.stringify(result)}`);
        }
        assert.deepEqual((await meanwhile).result?.content, [{ type: 'text', text: 'done' }]);
        await waitRunning(s.client, 0);
        const good = await s.client.callTool({ name: 'sandbox', arguments: { code: ' 0.01 ' } });
        assert.deepEqual(good.content, [{ type: 'text', text: 'done' }]);
      } finally {
        await s.close();
      }
    });
  });
}

/** The server over stdio, driven with raw lines. */
function rawStdio() {
  const child = spawn(process.execPath, [SERVER], { stdio: ['pipe', 'pipe', 'pipe'] });
  const out = new Lines(child.stdout);
  const err = new Lines(child.stderr);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
  const write = (line) => child.stdin.write(`${line}\n`);
  const request = (id, method, params) => write(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
  /** The answer with `id`, from line `from` on. */
  const answer = async (id, from = 0) => {
    const [line] = await out.waitFor({ exec: (text) => (JSON.parse(text).id === id ? [text] : null) }, 10_000, from);
    return JSON.parse(line);
  };
  return { child, out, err, exited, write, request, answer };
}

describe('stdio: invalid JSON-RPC written raw to stdin', () => {
  it('each line is answered with a protocol error, and the calls around it go on', { timeout: 60_000 }, async () => {
    const s = rawStdio();
    try {
      s.request(1, 'initialize', {
        protocolVersion: LATEST_PROTOCOL_VERSION,
        capabilities: {},
        clientInfo: { name: 'raw', version: '0' },
      });
      assert.ok((await s.answer(1)).result?.serverInfo);
      s.write(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
      s.request(2, 'tools/call', { name: 'spin', arguments: { seconds: 1 } });

      const before = s.out.lines.length;
      // [raw line, the id its error names, the code]
      const garbage = [
        ['this is not JSON', null, ErrorCode.ParseError],
        ['{"jsonrpc": "2.0", "id": 3, "method": ', null, ErrorCode.ParseError],
        ['\u0000\u0001\u0002', null, ErrorCode.ParseError],
        ['[]', null, ErrorCode.InvalidRequest],
        ['[{"jsonrpc": "2.0", "id": 4, "method": "ping"}]', null, ErrorCode.InvalidRequest],
        ['42', null, ErrorCode.InvalidRequest],
        ['"a string"', null, ErrorCode.InvalidRequest],
        ['null', null, ErrorCode.InvalidRequest],
        ['{}', null, ErrorCode.InvalidRequest],
        ['{"jsonrpc": "2.0", "id": 5}', 5, ErrorCode.InvalidRequest],
        ['{"jsonrpc": "1.0", "id": 6, "method": "ping"}', 6, ErrorCode.InvalidRequest],
        ['{"jsonrpc": "2.0", "id": 7, "method": 42}', 7, ErrorCode.InvalidRequest],
        ['{"jsonrpc": "2.0", "id": "eight", "method": "tools/call", "params": "oops"}', 'eight', ErrorCode.InvalidRequest],
        ['{"jsonrpc": "2.0", "id": 9, "method": "no/such/method"}', 9, ErrorCode.MethodNotFound],
        ['{"jsonrpc": "2.0", "id": 10, "method": "tools/call"}', 10, ErrorCode.InvalidParams],
        ['{"jsonrpc": "2.0", "id": 11, "method": "tools/call", "params": {"name": 11}}', 11, ErrorCode.InvalidParams],
        ['{"jsonrpc": "2.0", "id": 12, "method": "tools/call", "params": {"name": "spin", "arguments": 5}}', 12, ErrorCode.InvalidParams],
        // 1e400 is Infinity to JSON.parse.
        ['{"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name": "spin", "arguments": {"seconds": 1e400}}}', 13, ErrorCode.InvalidParams],
        ['{"jsonrpc": "2.0", "id": 14, "method": "tools/call", "params": {"name": "spin", "arguments": {"seconds": -1e400}}}', 14, ErrorCode.InvalidParams],
        ['{"jsonrpc": "2.0", "id": 15, "method": "tools/call", "params": {"name": "spin", "arguments": {"seconds": "1"}}}', 15, ErrorCode.InvalidParams],
        ['{"jsonrpc": "2.0", "id": 16, "method": "tools/call", "params": {"name": "nope", "arguments": {}}}', 16, ErrorCode.InvalidParams],
        // A line longer than the largest message (4 MiB).
        [`{"jsonrpc": "2.0", "id": 17, "method": "ping", "params": {"pad": "${'x'.repeat(5 * 1024 * 1024)}"}}`, null, ErrorCode.InvalidRequest],
        // No id: not a valid notification either, so an invalid request without an id.
        ['{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": 7}', null, ErrorCode.InvalidRequest],
      ];
      for (const [line] of garbage) s.write(line);
      // Blank lines and notifications are not answered, not even a notification the SDK
      // cannot use (a cancel of a request that does not exist).
      s.write('');
      s.write('   ');
      s.write('{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "nope"}}');
      s.write('{"jsonrpc": "2.0", "method": "notifications/no-such-notification"}');
      s.request(20, 'ping', {});
      assert.deepEqual((await s.answer(20, before)).result, {});

      const errors = s.out.lines.slice(before).map((line) => JSON.parse(line)).filter((m) => m.error);
      for (const [line, id, code] of garbage) {
        const found = errors.findIndex((m) => m.id === id && m.error.code === code);
        assert.notEqual(found, -1, `no error ${code} for id ${id} (${line.slice(0, 80)}); got ${JSON.stringify(errors)}`);
        errors.splice(found, 1);
      }
      assert.deepEqual(errors, [], 'no other errors');

      // The call from before the garbage ran to its end, and the server still works.
      assert.deepEqual((await s.answer(2)).result?.content, [{ type: 'text', text: 'done' }]);
      s.request(21, 'tools/call', { name: 'running', arguments: {} });
      assert.deepEqual((await s.answer(21)).result?.content, [{ type: 'text', text: '{"running":0}' }]);
      assert.equal(s.child.exitCode, null, 'the server still runs');

      s.child.stdin.end();
      assert.deepEqual(await s.exited, { code: 0, signal: null });
    } finally {
      s.child.kill('SIGKILL');
    }
  });
});

describe('http: bad bodies POSTed raw', () => {
  it('each is answered with a JSON-RPC error, and the session goes on', async () => {
    const server = await startHttpServer();
    const { client, transport } = await connectHttp(server.url);
    try {
      const headers = {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-session-id': transport.sessionId,
        'mcp-protocol-version': LATEST_PROTOCOL_VERSION,
      };
      const post = async (body, extra = {}) => {
        const res = await fetch(server.url, { method: 'POST', headers: { ...headers, ...extra }, body });
        return { status: res.status, body: await res.json() };
      };
      const cases = [
        ['not JSON', 'this is not JSON', {}, 400, ErrorCode.ParseError],
        ['not JSON-RPC', '{"jsonrpc": "2.0", "id": 1, "method": 42}', {}, 400, ErrorCode.ParseError],
        ['no session', '{"jsonrpc": "2.0", "id": 2, "method": "ping"}', { 'mcp-session-id': 'no-such-session' }, 404, -32001],
        ['too large', `"${'x'.repeat(5 * 1024 * 1024)}"`, {}, 413, ErrorCode.InvalidRequest],
      ];
      for (const [what, body, extra, status, code] of cases) {
        const answer = await post(body, extra);
        assert.equal(answer.status, status, what);
        assert.equal(answer.body.error?.code, code, `${what}: ${JSON.stringify(answer.body)}`);
      }
      const notMcp = await fetch(new URL('/elsewhere', server.url));
      assert.equal(notMcp.status, 404);
      await notMcp.body?.cancel();
      const after = await spinCall(client, 0.01);
      assert.deepEqual(after.result?.content, [{ type: 'text', text: 'done' }], String(after.error));
    } finally {
      await client.close();
      await server.stop();
    }
  });
});
