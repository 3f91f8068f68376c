// tethered-mcp: serve MCP tools on the official TypeScript SDK (@modelcontextprotocol/sdk
// 1.32.2) so that each call's AbortSignal aborts however the call ends, over stdio or
// streamable HTTP. Hand the signal to native work (a tethered-napi addon's `{ signal }`) and it
// stops with the call. Types: tethered-mcp.d.mts.
//
//   import { serve } from './tethered-mcp.mjs';
//   await serve({ name, version, tools, argv: process.argv.slice(2), running: () => addon.stats().running });
//
// Each call's signal aborts on the first of (each reason reaches native code as the token's
// cause, naming the call and what ended it):
// - the client's `notifications/cancelled` (a cancel, its request timeout): the SDK's
//   `extra.signal` (shared/protocol.js);
// - stdio: the end of stdin (the client closed its session, or died). The SDK's
//   `StdioServerTransport` listens for 'data' and 'error', never 'end', so its calls run on
//   until the client's SIGTERM; `StdioLines` below closes on 'end';
// - HTTP: the session closed (`DELETE`, which the SDK handles), or the POST that carried the
//   call dropped (a client that closes without a DELETE, or dies: the SDK only forgets the
//   stream and lets the call run);
// - the server shutting down (SIGTERM, SIGINT; the SDK installs no signal handler): every call
//   is aborted, their answers go out, and the process exits within `shutdownDeadlineMs`.
//
// Bad input is a protocol error: an unknown tool or arguments its zod schema refuses is
// answered with JSON-RPC -32602 (the SDK's `registerTool` would answer a tool result), a line
// on stdin that is no JSON with -32700, one that is no JSON-RPC message with -32600.

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

/** The largest JSON-RPC message accepted (a stdio line, an HTTP body), in bytes. */
const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/**
 * An error the SDK answers with this `code` and `message` (`Protocol._onrequest` sends an
 * error's numeric `code`, else -32603, and its `message`). Not an McpError, whose message starts
 * with "MCP error <code>: ", which the client's McpError would then say twice.
 */
export function rpcError(code, message) {
  return Object.assign(new Error(message), { code });
}

/** A call's work was stopped: its message says by what. */
export class Stopped extends Error {}

function describe(reason) {
  if (reason instanceof Error) return reason.message || reason.name;
  return String(reason);
}

/**
 * The signal of one call: aborted by the first of `sources` ([signal, what] pairs) that
 * aborts, with a `Stopped` naming the call and the source. `release()` removes its listeners
 * once the call is over.
 */
export function tether(label, sources) {
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

/**
 * The stdio transport: newline-delimited JSON-RPC on stdin and stdout, as the SDK's
 * `StdioServerTransport`, but (1) it closes when stdin ends, which the SDK's never does, and
 * (2) a line that is no JSON, or no JSON-RPC message, is answered with a parse error (-32700)
 * or an invalid-request error (-32600) naming the request's id when it has one; the SDK's only
 * reports it to `onerror`, unanswered.
 */
export class StdioLines {
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

/**
 * tools/call with any params. `Protocol.setRequestHandler` (shared/protocol.js) parses each
 * request with the schema it was given and answers a failure with -32603 (a ZodError has no
 * JSON-RPC code); `Server.setRequestHandler` (server/index.js) checks tools/call requests
 * against `CallToolRequestSchema` itself and answers a failure with -32602 invalid params. So the
 * outer schema lets every params through, and the Server's check (-32602) decides.
 */
const LooseCallToolRequestSchema = z.object({ method: z.literal('tools/call'), params: z.unknown().optional() });

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function flush(stream) {
  return new Promise((resolve) => {
    if (stream.destroyed || !stream.writable) return resolve();
    stream.write('', () => resolve());
  });
}

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

/**
 * Serves `tools` over stdio (`argv` empty) or streamable HTTP (`argv`: `--http HOST:PORT`; port
 * 0 for any free one, printed on stderr), until the client goes (stdio) or a SIGTERM or SIGINT
 * (both). See the module's header for what ends a call. `tools`: `{ name: { description,
 * schema (a zod object), run(args, { signal }) } }`; `run` resolves to a tool result, and
 * whatever it throws once `signal` aborted is taken as the call's stop. `running()` counts
 * the native work still running (a shutdown waits for it); `beforeExit()` runs just before the
 * process exits (a last log line).
 */
export async function serve({
  name,
  version,
  tools,
  argv = process.argv.slice(2),
  running = () => 0,
  log = (line) => process.stderr.write(`${name}: ${line}\n`),
  shutdownDeadlineMs = 2000,
  beforeExit = () => {},
}) {
  const listed = Object.entries(tools).map(([toolName, tool]) => {
    const { $schema: _dialect, ...inputSchema } = z.toJSONSchema(tool.schema);
    return { name: toolName, description: tool.description, inputSchema };
  });

  /** Aborted once, when the server shuts down; every call is tied to it. */
  const serverStop = new AbortController();
  // Every call in flight adds one listener; hundreds at once are expected, not a leak.
  setMaxListeners(0, serverStop.signal);
  /** The tool calls in flight: their handlers' promises. */
  const inflight = new Set();

  /**
   * One MCP server for one connection (stdio) or session (HTTP). `connection.sources(extra)`
   * gives the [signal, what] pairs of the connection a call is tied to besides its own
   * `extra.signal` and the server's; `connection.cancelled(requestId)` runs after a call the
   * client cancelled. The tools handlers are set on the underlying `Server` (as the SDK
   * documents for custom handlers) for the protocol errors above.
   */
  function createMcpServer(connection) {
    const mcp = new McpServer({ name, version }, { capabilities: { tools: {} } });
    mcp.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listed }));
    mcp.server.setRequestHandler(LooseCallToolRequestSchema, (request, extra) => callTool(request, extra, connection));
    return mcp;
  }

  async function callTool(request, extra, connection) {
    // Checked by Server's wrapper already; parsed again for its defaults and types.
    request = CallToolRequestSchema.parse(request);
    const { name: toolName, arguments: args } = request.params;
    const tool = Object.hasOwn(tools, toolName) ? tools[toolName] : undefined;
    if (tool === undefined) {
      throw rpcError(ErrorCode.InvalidParams, `Unknown tool: ${toolName}`);
    }
    const parsed = tool.schema.safeParse(args ?? {});
    if (!parsed.success) {
      throw rpcError(ErrorCode.InvalidParams, `Invalid arguments for tool ${toolName}: ${z.prettifyError(parsed.error)}`);
    }
    if (serverStop.signal.aborted) {
      throw rpcError(ErrorCode.InternalError, 'the server is shutting down');
    }
    const call = tether(`${toolName} #${extra.requestId}`, [
      [extra.signal, 'the SDK aborted the request'],
      ...connection.sources(extra),
      [serverStop.signal, ''],
    ]);
    const result = tool.run(parsed.data, { signal: call.signal });
    inflight.add(result);
    try {
      return await result;
    } catch (err) {
      if (!call.signal.aborted) throw err;
      if (extra.signal.aborted) connection.cancelled?.(extra.requestId);
      // Not sent when `extra.signal` aborted (the SDK drops the answer to a cancelled request).
      throw rpcError(ErrorCode.InternalError, `stopped: ${describe(call.signal.reason)}`);
    } finally {
      call.release();
      inflight.delete(result);
    }
  }

  // --- Shutdown -----------------------------------------------------------------------------

  let closeTransports = async () => {};
  let shuttingDown = false;

  async function shutdown(why) {
    if (shuttingDown) return;
    shuttingDown = true;
    const started = process.hrtime.bigint();
    const elapsedMs = () => Number(process.hrtime.bigint() - started) / 1e6;
    const deadline = setTimeout(() => {
      beforeExit();
      log(`shutdown (${why}) passed its deadline of ${shutdownDeadlineMs} ms with ` +
        `${running()} native jobs running; exit 1`);
      process.exit(1);
    }, shutdownDeadlineMs);
    log(`shutting down (${why}): ${inflight.size} calls in flight`);
    serverStop.abort(new Error(why));
    // The handlers settle within `abort()`; the native work returns at its next check.
    await Promise.allSettled([...inflight]);
    while (running() > 0) await sleep(2);
    // Let the answers of the stopped calls go out, then close the transports.
    await sleep(10);
    await closeTransports().catch((err) => log(`closing the transports failed: ${err.message}`));
    beforeExit();
    const left = running();
    const code = left === 0 ? 0 : 1;
    log(`shut down (${why}) in ${elapsedMs().toFixed(1)} ms: ${left} native jobs running; exit ${code}`);
    await Promise.race([flush(process.stdout), sleep(100)]);
    await flush(process.stderr);
    clearTimeout(deadline);
    process.exit(code);
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

  // --- stdio --------------------------------------------------------------------------------

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

  // --- streamable HTTP ----------------------------------------------------------------------

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
          // The AbortController of the POST that carried this request (see `watchPost`).
          const key = JSON.stringify(extra.requestId);
          const drop = session.drops.get(key);
          session.drops.delete(key);
          return [
            [session.stop.signal, ''],
            ...(drop ? [[drop.signal, '']] : []),
          ];
        },
        cancelled(requestId) {
          // The SDK ends a POST's stream only once every request on it was answered, and it
          // never answers a cancelled one: end it here.
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

  try {
    if (argv.length === 0) {
      await serveStdio();
    } else if (argv[0] === '--http' && argv.length === 2) {
      await serveHttp(argv[1]);
    } else {
      throw new Error('usage: [--http HOST:PORT]');
    }
  } catch (err) {
    log(err.message);
    process.exit(2);
  }
}
