#!/usr/bin/env node
// tethered-mcp-node: an MCP server (on the official TypeScript SDK, @modelcontextprotocol/sdk
// 1.32.2) whose tool calls run native work on a tethered job (the addon in ../node/addon, on
// tethered-napi), and whose native work stops when the call ends, however it ends.
//
//   node server.mjs                          # stdio
//   node server.mjs --http 127.0.0.1:8080    # streamable HTTP at http://127.0.0.1:8080/mcp
//                                            # (port 0: any free port; the address is printed
//                                            # on stderr: "tethered-mcp-node: listening on ...")
//
// Tools:
// - `spin` {"seconds": number}: the addon's native busy loop for `seconds` (0 to 3600), run
//   with the call's signal; the text `done` if it ran to the end.
// - `sandbox` {"code": string}: untrusted code, stopped by the same token. This Node example
//   has no interpreter: the sandbox *is* the spin loop. A code that is a number is that many
//   seconds of work (0 to 3600); any other code stands for code that never ends on its own,
//   and spins until the call ends or the sandbox's budget (60 s) runs out (a tool error).
// - `running` {}: the text of {"running": N}, N = the addon's native jobs running now in this
//   process (`stats().running`).
// Arguments are checked against each tool's zod schema; unknown tools and bad arguments are
// answered with a JSON-RPC invalid-params error (-32602).
//
// Every way a call can end, and who stops its native job (SDK 1.32.2; the files named are in
// node_modules/@modelcontextprotocol/sdk/dist/esm):
// - The client's `notifications/cancelled` (`callTool(..., { signal })` aborted): the SDK.
//   shared/protocol.js: `Protocol` registers a handler for CancelledNotificationSchema whose
//   `_oncancel` aborts the request's AbortController (`extra.signal`) with the client's reason.
// - The client's request timeout (`callTool(..., { timeout })`): the SDK. The client's
//   `Protocol.request` (shared/protocol.js) sends `notifications/cancelled` from its timeout
//   handler, as it does when its signal aborts; then as above.
// - stdio, the client closes the session (`Client.close()` ends the server's stdin; client/
//   stdio.js then waits 2 s, sends SIGTERM, waits 2 s, sends SIGKILL), or the client dies
//   (stdin ends too): NOT the SDK. server/stdio.js: `StdioServerTransport.start()` listens for
//   'data' and 'error' on stdin, never 'end', so its `onclose` never fires, `Protocol._onclose`
//   never aborts the handlers' signals, and a pending native job keeps the process (and a
//   core) busy until the client's SIGTERM. This server reads stdin with its own transport
//   (`StdioLines` below), which closes on 'end', and aborts the server-wide controller every
//   call is tied to ("the client closed stdin"), then exits 0.
// - HTTP, the client deletes its session (`transport.terminateSession()`, an HTTP DELETE): the
//   SDK. server/webStandardStreamableHttp.js: `handleDeleteRequest` calls `close()`, which
//   calls `onclose`, and `Protocol._onclose` aborts every handler's signal. The session's
//   controller here is aborted first (its `onclose` is set before `connect`).
// - HTTP, the client closes without a DELETE (`Client.close()`: client/streamableHttp.js
//   `close()` only aborts its fetches), the client dies, or the connection drops: NOT the SDK.
//   In webStandardStreamableHttp.js `handlePostRequest`, the SSE stream's `cancel` callback
//   (the client went away) only forgets the stream; the handler runs on. This server reads
//   each POST's body itself, ties the requests in it to an AbortController of that POST, and
//   aborts it when the response closes before it finished ("the client dropped the
//   connection").
// - The server shuts down (SIGTERM, SIGINT): NOT the SDK (it installs no signal handlers).
//   `shutdown()` aborts the server-wide controller ("the server is shutting down (SIGTERM)"),
//   waits for the native jobs to return and the answers to go out, closes the transports and
//   exits 0 within SHUTDOWN_DEADLINE_MS (1 if a native job still ran then).
// Also: after a client cancel over HTTP the SDK never answers the request (protocol.js skips
// the response once `extra.signal` aborted), and its transport ends a POST's SSE stream only
// once every request on it was answered (`send()`), so the stream and its connection would
// stay open until the session ends; this server ends it with `transport.closeSSEStream()`.
//
// Every native loop that a cancel stopped prints a line on stderr (from the addon's
// `takeStops()`): `tethered-mcp-node: stopped (<reason>: <cause>) at <ns>`, where <ns> is the
// CLOCK_MONOTONIC time (Node's `process.hrtime.bigint()` clock on Linux) at which the loop
// returned, and <cause> names the tool, the request and what ended it. The tests read these.

import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import process from 'node:process';

import * as z from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  isInitializeRequest,
  JSONRPCMessageSchema,
  ListToolsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';

const NAME = 'tethered-mcp-node';
const VERSION = '0.1.0';
/** The longest `spin` (and numeric `sandbox` code) a call may ask for, in seconds. */
const MAX_SECONDS = 3600;
/** How long code that never ends by itself may spin in the sandbox, in seconds. */
const SANDBOX_BUDGET_SECONDS = 60;
/** The longest sandbox code accepted, in characters. */
const MAX_CODE_CHARS = 100_000;
/** How long a shutdown may take, from the signal to the exit. */
const SHUTDOWN_DEADLINE_MS = 2000;
/** The largest JSON-RPC message accepted (a stdio line, an HTTP body), in bytes. */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

function log(line) {
  process.stderr.write(`${NAME}: ${line}\n`);
}

let addon;
try {
  ({ default: addon } = await import('tethered-napi-example'));
} catch (err) {
  log(`cannot load the native addon (run \`npm run build\` first): ${err.message}`);
  process.exit(1);
}

// --- Stops: what the native loops saw, on stderr -------------------------------------------

// The addon's `nowNs()` counts from its own epoch on the monotonic clock (Rust's `Instant`,
// CLOCK_MONOTONIC on Linux); `process.hrtime.bigint()` reads the same clock from zero.
const epochNs = (() => {
  const before = process.hrtime.bigint();
  const addonNs = BigInt(Math.round(addon.nowNs()));
  const after = process.hrtime.bigint();
  return (before + after) / 2n - addonNs;
})();

function drainStops() {
  for (const stop of addon.takeStops()) {
    log(`stopped (${stop.reason}) at ${epochNs + BigInt(Math.round(stop.atNs))}`);
  }
}
setInterval(drainStops, 20).unref();

// --- The server-wide controller, and the calls in flight -----------------------------------

/** Aborted once, when the server shuts down; every call is tied to it. */
const serverStop = new AbortController();
// Every call in flight adds one listener; hundreds at once are expected, not a leak.
setMaxListeners(0, serverStop.signal);
/** The tool calls in flight: their handlers' promises. */
const inflight = new Set();

/**
 * An error the SDK answers with this `code` and `message` (`Protocol._onrequest` sends an
 * error's numeric `code`, else -32603, and its `message`). Not an McpError, whose message starts
 * with "MCP error <code>: ", which the client's McpError would then say twice.
 */
function rpcError(code, message) {
  return Object.assign(new Error(message), { code });
}

/** A call's native work was stopped: `reason` says by what. */
class Stopped extends Error {}

function describe(reason) {
  if (reason instanceof Error) return reason.message || reason.name;
  return String(reason);
}

/**
 * The signal of one call: aborted by the first of `sources` ([signal, what] pairs) that
 * aborts, with an Error naming the call and the source (the native loop sees its message as
 * its token's cause). `release()` removes its listeners once the call is over.
 */
function tether(label, sources) {
  const controller = new AbortController();
  const listeners = [];
  const release = () => {
    for (const [signal, listener] of listeners) signal.removeEventListener('abort', listener);
    listeners.length = 0;
  };
  for (const [signal, what] of sources) {
    const abort = () => {
      const why = what ? `${what}: ${describe(signal.reason)}` : describe(signal.reason);
      controller.abort(new Stopped(`${label}: ${why}`));
      release();
    };
    if (signal.aborted) {
      abort();
      break;
    }
    signal.addEventListener('abort', abort, { once: true });
    listeners.push([signal, abort]);
  }
  return { signal: controller.signal, release };
}

/** Runs the addon's `spin` for `ms` with the call's signal: true if it ran to the end. */
async function spinNative(ms, signal) {
  try {
    await addon.spin(ms, { signal });
    return true;
  } catch (err) {
    if (err?.name === 'AbortError') {
      // It rejected within `abort()`; the native loop returns at its next check (the stderr
      // line says when).
      throw signal.reason instanceof Stopped ? signal.reason : new Stopped(describe(err.cause));
    }
    throw rpcError(ErrorCode.InternalError, `the native job failed: ${err?.message} (${err?.code})`);
  }
}

// --- The tools ------------------------------------------------------------------------------

const text = (value) => ({ content: [{ type: 'text', text: value }] });

const TOOLS = {
  spin: {
    description: 'Spin a native busy loop for `seconds` (0 to 3600); `done` if it ran to the end.',
    schema: z.strictObject({
      seconds: z
        .number()
        .min(0)
        .max(MAX_SECONDS)
        .describe(`How long to spin, in seconds (0 to ${MAX_SECONDS})`),
    }),
    async run({ seconds }, signal) {
      await spinNative(Math.round(seconds * 1000), signal);
      return text('done');
    },
  },
  sandbox: {
    description:
      'Run untrusted code in the sandbox (here: the native spin loop). A number is that many ' +
      `seconds of work (0 to ${MAX_SECONDS}); any other code runs until cancelled or its ` +
      `${SANDBOX_BUDGET_SECONDS} s budget runs out.`,
    schema: z.strictObject({
      code: z.string().max(MAX_CODE_CHARS).describe('The code: untrusted, it may never end'),
    }),
    async run({ code }, signal) {
      const trimmed = code.trim();
      const seconds = trimmed === '' ? Number.NaN : Number(trimmed);
      if (Number.isFinite(seconds)) {
        if (seconds < 0 || seconds > MAX_SECONDS) {
          throw rpcError(
            ErrorCode.InvalidParams,
            `a numeric code is a duration from 0 to ${MAX_SECONDS} seconds, not ${trimmed}`,
          );
        }
        await spinNative(Math.round(seconds * 1000), signal);
        return text('done');
      }
      await spinNative(SANDBOX_BUDGET_SECONDS * 1000, signal);
      return { ...text(`the code ran out of its budget of ${SANDBOX_BUDGET_SECONDS} s`), isError: true };
    },
  },
  running: {
    description: 'The native jobs of this server still running, as the JSON text {"running": N}.',
    schema: z.strictObject({}),
    async run() {
      return text(JSON.stringify({ running: addon.stats().running }));
    },
  },
};

const LISTED = Object.entries(TOOLS).map(([name, tool]) => {
  const { $schema: _dialect, ...inputSchema } = z.toJSONSchema(tool.schema);
  return { name, description: tool.description, inputSchema };
});

/**
 * tools/call with any params. `Protocol.setRequestHandler` (shared/protocol.js) parses each
 * request with the schema it was given and answers a failure with -32603 (a ZodError has no
 * JSON-RPC code); `Server.setRequestHandler` (server/index.js) checks tools/call requests
 * against `CallToolRequestSchema` itself and answers a failure with -32602 invalid params. So the
 * outer schema lets every params through, and the Server's check (-32602) decides.
 */
const LooseCallToolRequestSchema = z.object({ method: z.literal('tools/call'), params: z.unknown().optional() });

/**
 * One MCP server for one connection (stdio) or session (HTTP). `connection.sources(extra)`
 * gives the [signal, what] pairs of the connection that a call is tied to besides its own
 * `extra.signal` and the server's; `connection.cancelled(requestId)` runs after a call the
 * client cancelled.
 *
 * McpServer's own `registerTool` answers an unknown tool or bad arguments with a tool result
 * (`isError: true`): in server/mcp.js its tools/call handler catches every error (but
 * UrlElicitationRequired) and returns `createToolError(...)`. This server wants JSON-RPC
 * invalid-params errors, so it sets the tools handlers on the underlying `Server`, as McpServer's
 * documentation says to for custom request handlers.
 */
function createMcpServer(connection) {
  const mcp = new McpServer({ name: NAME, version: VERSION }, { capabilities: { tools: {} } });
  mcp.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: LISTED }));
  mcp.server.setRequestHandler(LooseCallToolRequestSchema, (request, extra) => callTool(request, extra, connection));
  return mcp;
}

async function callTool(request, extra, connection) {
  // Checked by Server's wrapper already; parsed again for its defaults and types.
  request = CallToolRequestSchema.parse(request);
  const { name, arguments: args } = request.params;
  const tool = Object.hasOwn(TOOLS, name) ? TOOLS[name] : undefined;
  if (tool === undefined) {
    throw rpcError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
  }
  const parsed = tool.schema.safeParse(args ?? {});
  if (!parsed.success) {
    throw rpcError(ErrorCode.InvalidParams, `Invalid arguments for tool ${name}: ${z.prettifyError(parsed.error)}`);
  }
  if (serverStop.signal.aborted) {
    throw rpcError(ErrorCode.InternalError, `the server is shutting down`);
  }
  const call = tether(`${name} #${extra.requestId}`, [
    [extra.signal, 'the SDK aborted the request'],
    ...connection.sources(extra),
    [serverStop.signal, ''],
  ]);
  const running = tool.run(parsed.data, call.signal);
  inflight.add(running);
  try {
    return await running;
  } catch (err) {
    if (!(err instanceof Stopped)) throw err;
    if (extra.signal.aborted) connection.cancelled?.(extra.requestId);
    // Not sent when `extra.signal` aborted (the SDK drops the answer to a cancelled request).
    throw rpcError(ErrorCode.InternalError, `stopped: ${err.message}`);
  } finally {
    call.release();
    inflight.delete(running);
  }
}

// --- Shutdown -------------------------------------------------------------------------------

let closeTransports = async () => {};
let shuttingDown = false;

async function shutdown(why) {
  if (shuttingDown) return;
  shuttingDown = true;
  const started = process.hrtime.bigint();
  const elapsedMs = () => Number(process.hrtime.bigint() - started) / 1e6;
  const deadline = setTimeout(() => {
    drainStops();
    log(`shutdown (${why}) passed its deadline of ${SHUTDOWN_DEADLINE_MS} ms with ` +
      `${addon.stats().running} native jobs running; exit 1`);
    process.exit(1);
  }, SHUTDOWN_DEADLINE_MS);
  log(`shutting down (${why}): ${inflight.size} calls in flight`);
  serverStop.abort(new Error(why));
  // The handlers settle within `abort()`; the native loops return at their next check.
  await Promise.allSettled([...inflight]);
  while (addon.stats().running > 0) await sleep(2);
  // Let the answers of the stopped calls go out, then close the transports.
  await sleep(10);
  await closeTransports().catch((err) => log(`closing the transports failed: ${err.message}`));
  drainStops();
  const left = addon.stats().running;
  const code = left === 0 ? 0 : 1;
  log(`shut down (${why}) in ${elapsedMs().toFixed(1)} ms: ${left} native jobs running; exit ${code}`);
  await Promise.race([flush(process.stdout), sleep(100)]);
  await flush(process.stderr);
  clearTimeout(deadline);
  process.exit(code);
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function flush(stream) {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) return resolve();
    stream.write('', () => resolve());
  });
}

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    if (shuttingDown) {
      log(`${signal} again: exit 1`);
      process.exit(1);
    }
    shutdown(`the server is shutting down (${signal})`);
  });
}

// --- stdio ----------------------------------------------------------------------------------

/**
 * The stdio transport: newline-delimited JSON-RPC on stdin and stdout, as the SDK's
 * `StdioServerTransport`, but (1) it closes when stdin ends, which the SDK's never does (see the
 * header), and (2) a line that is no JSON, or no JSON-RPC message, is answered with a parse
 * error (-32700) or an invalid-request error (-32600) naming the request's id when it has one;
 * the SDK's (server/stdio.js `processReadBuffer`) only reports it to `onerror`, unanswered.
 */
class StdioLines {
  constructor(input = process.stdin, output = process.stdout) {
    this._input = input;
    this._output = output;
    this._buffer = Buffer.alloc(0);
    this._tooLong = false;
    this._closed = false;
    this._ondata = (chunk) => this._receive(chunk);
    this._onend = () => this.close();
    this._onerror = (err) => {
      this.onerror?.(err);
      this.close();
    };
  }

  async start() {
    this._input.on('data', this._ondata);
    this._input.on('end', this._onend);
    this._input.on('error', this._onerror);
  }

  _receive(chunk) {
    this._buffer = this._buffer.length === 0 ? chunk : Buffer.concat([this._buffer, chunk]);
    let newline;
    while (!this._closed && (newline = this._buffer.indexOf(0x0a)) !== -1) {
      const line = this._buffer.subarray(0, newline);
      this._buffer = this._buffer.subarray(newline + 1);
      if (this._tooLong) {
        this._tooLong = false;
        this._answerError(null, ErrorCode.InvalidRequest, `Invalid Request: a message is at most ${MAX_MESSAGE_BYTES} bytes`);
        continue;
      }
      this._line(line.toString('utf8'));
    }
    if (this._buffer.length > MAX_MESSAGE_BYTES) {
      // The rest of this line is dropped; its end is answered with an error.
      this._buffer = Buffer.alloc(0);
      this._tooLong = true;
    }
  }

  _line(line) {
    if (line.trim() === '') return;
    let value;
    try {
      value = JSON.parse(line);
    } catch (err) {
      this._answerError(null, ErrorCode.ParseError, `Parse error: ${err.message}`);
      return;
    }
    const parsed = JSONRPCMessageSchema.safeParse(value);
    if (!parsed.success) {
      const id = value !== null && typeof value === 'object' && !Array.isArray(value) &&
        (typeof value.id === 'string' || typeof value.id === 'number') ? value.id : null;
      const issue = parsed.error.issues?.[0];
      this._answerError(id, ErrorCode.InvalidRequest, `Invalid Request: not a JSON-RPC 2.0 message${issue ? ` (${issue.message})` : ''}`);
      return;
    }
    try {
      this.onmessage?.(parsed.data);
    } catch (err) {
      this.onerror?.(err);
    }
  }

  _answerError(id, code, message) {
    this.send({ jsonrpc: '2.0', id, error: { code, message } }).catch(() => {});
  }

  send(message) {
    return new Promise((resolve) => {
      if (this._closed || this._output.destroyed) return resolve();
      if (this._output.write(serializeMessage(message))) resolve();
      else this._output.once('drain', resolve);
    });
  }

  async close() {
    if (this._closed) return;
    this._closed = true;
    this._input.off('data', this._ondata);
    this._input.off('end', this._onend);
    this._input.off('error', this._onerror);
    this._input.pause();
    this.onclose?.();
  }
}

async function serveStdio() {
  // Registered before the transport's own listeners, so the calls see this reason first.
  process.stdin.once('end', () => shutdown('the client closed stdin'));
  process.stdin.once('error', (err) => shutdown(`stdin failed (${err.code ?? err.message})`));
  // The client died, or closed its end: the answers have nowhere to go (EPIPE).
  process.stdout.on('error', (err) => shutdown(`stdout failed (${err.code ?? err.message})`));
  const mcp = createMcpServer({ sources: () => [] });
  closeTransports = () => mcp.close();
  await mcp.connect(new StdioLines());
  log('serving MCP on stdio');
}

// --- streamable HTTP ------------------------------------------------------------------------

function parseHostPort(value) {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(value ?? '');
  const port = match ? Number(match[3]) : Number.NaN;
  if (!match || port > 65535) {
    throw new Error(`--http takes HOST:PORT (e.g. 127.0.0.1:8080, [::1]:0), not ${JSON.stringify(value)}`);
  }
  return { host: match[1] ?? (match[2] || '127.0.0.1'), port };
}

function answerJson(res, status, code, message, headers = {}) {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

/**
 * The request's body, or null as soon as it is longer than `limit` bytes (the rest is read
 * and dropped, so that the client, still sending, reads the answer).
 */
function readBody(req, limit) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      if (size > limit) return;
      size += chunk.length;
      if (size > limit) {
        chunks.length = 0;
        resolve(null);
      } else {
        chunks.push(chunk);
      }
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function requestIds(body) {
  const messages = Array.isArray(body) ? body : [body];
  return messages
    .filter((m) => m !== null && typeof m === 'object' && typeof m.method === 'string' &&
      (typeof m.id === 'string' || typeof m.id === 'number'))
    .map((m) => JSON.stringify(m.id));
}

async function serveHttp(address) {
  const { host, port } = parseHostPort(address);
  /** The sessions by id: { transport, mcp, stop, drops }. */
  const sessions = new Map();
  let allowedHosts;

  async function newSession() {
    const session = { stop: new AbortController(), drops: new Map(), transport: undefined, mcp: undefined };
    setMaxListeners(0, session.stop.signal);
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => sessions.set(id, session),
      // A DNS-rebinding guard for a server on a loopback address.
      ...(allowedHosts ? { enableDnsRebindingProtection: true, allowedHosts } : {}),
    });
    // Before `connect`, which chains the SDK's `_onclose` after it.
    transport.onclose = () => {
      session.stop.abort(new Error('the session was closed'));
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId);
    };
    session.transport = transport;
    session.mcp = createMcpServer({
      sources(extra) {
        // The AbortController of the POST that carried this request (see `handle`).
        const key = JSON.stringify(extra.requestId);
        const drop = session.drops.get(key);
        session.drops.delete(key);
        return [
          [session.stop.signal, ''],
          ...(drop ? [[drop.signal, '']] : []),
        ];
      },
      cancelled(requestId) {
        transport.closeSSEStream(requestId);
      },
    });
    await session.mcp.connect(transport);
    return session;
  }

  /** Ties the requests of a POST to an AbortController aborted if its response never finishes. */
  function watchPost(session, body, res) {
    const keys = requestIds(body);
    if (keys.length === 0) return;
    const drop = new AbortController();
    for (const key of keys) session.drops.set(key, drop);
    res.once('close', () => {
      if (!res.writableFinished) drop.abort(new Error('the client dropped the connection'));
      // A call claims its entry when it starts; what is left (other methods) goes soon.
      setTimeout(() => {
        for (const key of keys) if (session.drops.get(key) === drop) session.drops.delete(key);
      }, 1000).unref();
    });
  }

  async function handle(req, res) {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== '/mcp') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found: the MCP endpoint is /mcp\n');
      return;
    }
    if (shuttingDown) {
      answerJson(res, 503, ErrorCode.ConnectionClosed, 'the server is shutting down');
      return;
    }
    const id = req.headers['mcp-session-id'];
    const session = typeof id === 'string' ? sessions.get(id) : undefined;
    if (typeof id === 'string' && session === undefined) {
      answerJson(res, 404, -32001, 'Session not found');
      return;
    }
    if (req.method === 'POST') {
      const raw = await readBody(req, MAX_MESSAGE_BYTES);
      if (raw === null) {
        answerJson(res, 413, ErrorCode.InvalidRequest, `Payload too large: a message is at most ${MAX_MESSAGE_BYTES} bytes`, {
          connection: 'close',
        });
        return;
      }
      let body;
      try {
        body = JSON.parse(raw);
      } catch {
        answerJson(res, 400, ErrorCode.ParseError, 'Parse error: Invalid JSON');
        return;
      }
      if (session !== undefined) {
        watchPost(session, body, res);
        await session.transport.handleRequest(req, res, body);
      } else if (isInitializeRequest(body)) {
        const fresh = await newSession();
        await fresh.transport.handleRequest(req, res, body);
      } else {
        answerJson(res, 400, ErrorCode.ConnectionClosed, 'Bad Request: no valid session ID (initialize first)');
      }
      return;
    }
    if (req.method === 'GET' || req.method === 'DELETE') {
      if (session === undefined) {
        answerJson(res, 400, ErrorCode.ConnectionClosed, 'Bad Request: Mcp-Session-Id header is required');
        return;
      }
      await session.transport.handleRequest(req, res);
      return;
    }
    res.writeHead(405, { allow: 'GET, POST, DELETE' }).end();
  }

  const http = createServer((req, res) => {
    handle(req, res).catch((err) => {
      log(`${req.method} ${req.url} failed: ${err?.stack ?? err}`);
      answerJson(res, 500, ErrorCode.InternalError, 'Internal server error');
    });
  });
  closeTransports = async () => {
    await Promise.allSettled([...sessions.values()].map((session) => session.mcp.close()));
    const closed = new Promise((resolve) => http.close(resolve));
    await Promise.race([closed, sleep(200)]);
    http.closeAllConnections();
  };
  await new Promise((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const bound = http.address();
  const shown = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  if (['127.0.0.1', '::1', 'localhost'].includes(host.toLowerCase())) {
    allowedHosts = [`127.0.0.1:${bound.port}`, `localhost:${bound.port}`, `[::1]:${bound.port}`];
  }
  log(`listening on http://${shown}:${bound.port}/mcp`);
}

// --- main -----------------------------------------------------------------------------------

const args = process.argv.slice(2);
try {
  if (args.length === 0) {
    await serveStdio();
  } else if (args[0] === '--http' && args.length === 2) {
    await serveHttp(args[1]);
  } else {
    throw new Error('usage: node server.mjs [--http HOST:PORT]');
  }
} catch (err) {
  log(err.message);
  process.exit(2);
}
