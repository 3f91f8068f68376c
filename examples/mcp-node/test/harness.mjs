// What the tests share: the server spawned over stdio (by the SDK's StdioClientTransport) or
// over HTTP (by the test, then reached with the SDK's StreamableHTTPClientTransport), its
// stderr read line by line, and the `running` tool polled.

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import process from 'node:process';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

export const SERVER = fileURLToPath(new URL('../server.mjs', import.meta.url));
export const KILLED_CLIENT = fileURLToPath(new URL('./killed-client.mjs', import.meta.url));
/** How long a native job may take to stop after its call ended (generous: a busy machine). */
export const STOP_WITHIN_MS = 5000;
/** The server's shutdown deadline, and some slack for a busy machine. */
export const SHUTDOWN_WITHIN_MS = 2000 + 1500;

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The lines of a readable stream, as they come, with a way to wait for one. */
export class Lines {
  constructor(stream, { echo = process.env.MCP_NODE_ECHO === '1' } = {}) {
    this.lines = [];
    this._waiters = new Set();
    this.ended = false;
    let rest = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      rest += chunk;
      let newline;
      while ((newline = rest.indexOf('\n')) !== -1) {
        const line = rest.slice(0, newline);
        rest = rest.slice(newline + 1);
        if (echo) process.stderr.write(`  | ${line}\n`);
        this.lines.push(line);
        for (const waiter of this._waiters) waiter();
      }
    });
    stream.on('end', () => {
      this.ended = true;
      for (const waiter of this._waiters) waiter();
    });
  }

  /** The first line (from the `from`-th on) that `pattern` matches: its match. */
  find(pattern, from = 0) {
    for (let i = from; i < this.lines.length; i++) {
      const match = pattern.exec(this.lines[i]);
      if (match) return match;
    }
    return null;
  }

  /** Waits up to `ms` for a line matching `pattern`; its match. */
  async waitFor(pattern, ms = STOP_WITHIN_MS, from = 0) {
    const deadline = Date.now() + ms;
    for (;;) {
      const match = this.find(pattern, from);
      if (match) return match;
      const left = deadline - Date.now();
      if (left <= 0 || this.ended) {
        throw new Error(`no line matched ${pattern} within ${ms} ms; the lines:\n${this.lines.join('\n')}`);
      }
      await new Promise((resolve) => {
        const timer = setTimeout(done, left);
        function done() {
          clearTimeout(timer);
          waiters.delete(done);
          resolve();
        }
        const waiters = this._waiters;
        waiters.add(done);
      });
    }
  }
}

function newClient() {
  return new Client({ name: 'tethered-mcp-node-test', version: '0.1.0' });
}

/**
 * The server over stdio, spawned by the SDK's StdioClientTransport: `client`, `transport`,
 * `stderr` (Lines), `pid`, and `exited` (its exit code and signal).
 */
export async function startStdio() {
  const transport = new StdioClientTransport({ command: process.execPath, args: [SERVER], stderr: 'pipe' });
  const stderr = new Lines(transport.stderr);
  const client = newClient();
  await client.connect(transport);
  // The child process itself is private to the transport; the tests only read its exit.
  const child = transport._process;
  const exited = child.exitCode !== null
    ? Promise.resolve({ code: child.exitCode, signal: child.signalCode })
    : once(child, 'exit').then(([code, signal]) => ({ code, signal }));
  return { client, transport, stderr, pid: transport.pid, exited };
}

/**
 * The server over HTTP, spawned here with `--http 127.0.0.1:0`: `url` (read from its stderr),
 * `stderr` (Lines), `child`, `exited`, and `stop()` (SIGKILL if still running).
 */
export async function startHttpServer() {
  const child = spawn(process.execPath, [SERVER, '--http', '127.0.0.1:0'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const exited = once(child, 'exit').then(([code, signal]) => ({ code, signal }));
  const stderr = new Lines(child.stderr);
  const [, url] = await stderr.waitFor(/listening on (http:\S+)/, 10_000);
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  };
  return { url: new URL(url), stderr, child, pid: child.pid, exited, stop };
}

/** A client of the HTTP server at `url`: `client`, `transport`. */
export async function connectHttp(url) {
  const transport = new StreamableHTTPClientTransport(url);
  const client = newClient();
  await client.connect(transport);
  return { client, transport };
}

/**
 * Each transport's way to reach a fresh server: `open()` gives its `client`, its `stderr` lines,
 * and `close()`, which ends the client and the server.
 */
export const TRANSPORTS = {
  async stdio() {
    const s = await startStdio();
    return { client: s.client, stderr: s.stderr, close: () => s.client.close() };
  },
  async http() {
    const server = await startHttpServer();
    const { client } = await connectHttp(server.url);
    return {
      client,
      stderr: server.stderr,
      async close() {
        await client.close();
        await server.stop();
      },
    };
  },
};

/** The `running` tool's N. */
export async function running(client) {
  const result = await client.callTool({ name: 'running', arguments: {} });
  const { running: n } = JSON.parse(result.content[0].text);
  return n;
}

/**
 * Polls `running` until it is `n` (with `atLeast`: `n` or more), for up to `ms`; the time it
 * took, in ms.
 */
export async function waitRunning(client, n, ms = STOP_WITHIN_MS, { atLeast = false } = {}) {
  const started = performance.now();
  let last;
  while (!((last = await running(client)) === n || (atLeast && last > n))) {
    if (performance.now() - started > ms) {
      throw new Error(`{"running": ${last}} after ${ms} ms, waiting for ${atLeast ? 'at least ' : ''}${n}`);
    }
    await sleep(5);
  }
  return performance.now() - started;
}

/** A call of `spin` for `seconds`; resolves with its outcome (a result, or the error). */
export function spinCall(client, seconds, options = {}) {
  return client
    .callTool({ name: 'spin', arguments: { seconds } }, undefined, options)
    .then((result) => ({ result }), (error) => ({ error }));
}

/** Whether process `pid` is gone (a zombie nobody reaped counts as gone). */
export function gone(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    if (state === 'Z' || state === 'X') return true;
  } catch {
    // no /proc (not Linux), or no such process: ask kill(0)
  }
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return err.code === 'ESRCH';
  }
}

/** Waits up to `ms` for process `pid` to be gone. */
export async function waitGone(pid, ms = SHUTDOWN_WITHIN_MS) {
  const deadline = Date.now() + ms;
  while (!gone(pid)) {
    if (Date.now() > deadline) throw new Error(`process ${pid} still runs after ${ms} ms`);
    await sleep(10);
  }
}

/** Kills `pid` if it still runs (clean-up after a failed test). */
export function reap(pid) {
  if (pid && !gone(pid)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone meanwhile
    }
  }
}
