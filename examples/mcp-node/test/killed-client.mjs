// A client process the tests kill with SIGKILL mid-call: `node killed-client.mjs stdio` spawns
// the server itself (over stdio, its stderr inherited: the test reads it on this process's
// stderr), `node killed-client.mjs http URL` connects to a running server. It starts a
// `spin` of 60 s, waits until the server runs it, prints `ready <server pid or ->` on stdout,
// and waits to be killed.

import process from 'node:process';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { SERVER, waitRunning } from './harness.mjs';

const [mode, url] = process.argv.slice(2);
const transport = mode === 'http'
  ? new StreamableHTTPClientTransport(new URL(url))
  : new StdioClientTransport({ command: process.execPath, args: [SERVER], stderr: 'inherit' });
const client = new Client({ name: 'tethered-mcp-node-killed-client', version: '0.1.0' });
await client.connect(transport);
client.callTool({ name: 'spin', arguments: { seconds: 60 } }).catch(() => {});
await waitRunning(client, 1);
process.stdout.write(`ready ${mode === 'http' ? '-' : transport.pid}\n`);
setInterval(() => {}, 60_000);
