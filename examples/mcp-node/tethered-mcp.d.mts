// TypeScript declarations of tethered-mcp.mjs: MCP tools on the official TypeScript SDK whose
// call's AbortSignal aborts however the call ends.

import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type * as z from 'zod';

/** What a tool's `run` gets beside its arguments. */
export interface CallContext {
  /**
   * Aborted however the call ends: the client's cancel or request timeout, the end of stdin,
   * a closed session or a dropped connection, the server's shutdown. Its `reason` is a
   * `Stopped` naming the call and what ended it. Hand it to native work (`{ signal }`).
   */
  signal: AbortSignal;
}

/** One tool: its description, the zod schema of its arguments, and its work. */
export interface Tool<Schema extends z.ZodType = z.ZodType> {
  description: string;
  schema: Schema;
  /**
   * The call's work: a tool result. Whatever it throws once `signal` aborted is taken as the
   * call's stop (answered "stopped: ..." when the client still listens).
   */
  run(args: z.infer<Schema>, context: CallContext): Promise<CallToolResult>;
}

/** The tools by name, each with its own schema (so each `run` gets its own arguments' type). */
export type Tools<Schemas extends Record<string, z.ZodType>> = {
  [Name in keyof Schemas]: Tool<Schemas[Name]>;
};

export interface ServeOptions<Schemas extends Record<string, z.ZodType> = Record<string, z.ZodType>> {
  name: string;
  version: string;
  tools: Tools<Schemas>;
  /** `[]` for stdio, `['--http', 'HOST:PORT']` for streamable HTTP; `process.argv.slice(2)` by default. */
  argv?: string[];
  /** The native work still running: a shutdown waits for it to reach 0. */
  running?: () => number;
  /** Where a line of the server's log goes (stderr, prefixed with `name`, by default). */
  log?: (line: string) => void;
  /** How long a shutdown may take before the process exits regardless (2000 ms by default). */
  shutdownDeadlineMs?: number;
  /** Runs just before the process exits. */
  beforeExit?: () => void;
}

/** Serves `tools` until the client goes (stdio) or SIGTERM / SIGINT, then exits. */
export function serve<Schemas extends Record<string, z.ZodType>>(options: ServeOptions<Schemas>): Promise<void>;

/** A call's work was stopped: the `reason` of its signal. */
export class Stopped extends Error {}

/** An error answered as a JSON-RPC error with this `code` and `message`. */
export function rpcError(code: number, message: string): Error & { code: number };

/**
 * A signal aborted by the first of `sources` (each `[signal, what]`), with a `Stopped` naming
 * `label` and the source; `release()` removes its listeners.
 */
export function tether(label: string, sources: Array<[AbortSignal, string]>): { signal: AbortSignal; release(): void };

/** The stdio transport that closes when stdin ends (the SDK's never does). */
export class StdioLines {
  /** `input` and `output`: stdin and stdout by default (Node streams). */
  constructor(input?: unknown, output?: unknown);
  start(): Promise<void>;
  send(message: unknown): Promise<void>;
  close(): Promise<void>;
  onmessage?: (message: unknown) => void;
  onerror?: (error: Error) => void;
  onclose?: () => void;
}
