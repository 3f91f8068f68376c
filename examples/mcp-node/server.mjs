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
//
// `tethered-mcp.mjs` does everything that ties a call to its ends (the client's cancel and
// timeout, stdin's end, a closed session or a dropped connection, SIGTERM): the tethered part
// of this server is its `serve(...)` call and the `{ signal }` each tool hands the addon.
//
// Every native loop that a cancel stopped prints a line on stderr (from the addon's
// `takeStops()`): `tethered-mcp-node: stopped (<reason>: <cause>) at <ns>`, where <ns> is the
// CLOCK_MONOTONIC time (Node's `process.hrtime.bigint()` clock on Linux) at which the loop
// returned, and <cause> names the tool, the request and what ended it. The tests read these.

import process from 'node:process';

import * as z from 'zod';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';

import { rpcError, serve } from './tethered-mcp.mjs';

const NAME = 'tethered-mcp-node';
const VERSION = '0.1.0';
/** The longest `spin` (and numeric `sandbox` code) a call may ask for, in seconds. */
const MAX_SECONDS = 3600;
/** How long code that never ends by itself may spin in the sandbox, in seconds. */
const SANDBOX_BUDGET_SECONDS = 60;
/** The longest sandbox code accepted, in characters. */
const MAX_CODE_CHARS = 100_000;

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

/** Runs the addon's `spin` for `ms` with the call's signal. */
async function spinNative(ms, signal) {
  try {
    await addon.spin(ms, { signal });
  } catch (err) {
    if (signal.aborted) throw err; // the call was stopped: tethered-mcp answers it
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
    async run({ seconds }, { signal }) {
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
    async run({ code }, { signal }) {
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

// --- main -----------------------------------------------------------------------------------

await serve({
  name: NAME,
  version: VERSION,
  tools: TOOLS,
  running: () => addon.stats().running,
  log,
  beforeExit: drainStops,
});
