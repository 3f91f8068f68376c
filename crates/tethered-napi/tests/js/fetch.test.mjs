// Side by side with fetch: one signal aborts a fetch and a native job, and the job's promise
// rejects no later than fetch's: both within the abort, before the event loop's next turn.
import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from 'node:test';
import { addon, isAbortError, waitFor } from './helpers.mjs';

/** A server that accepts requests and never answers. */
async function silentServer() {
  const requests = [];
  const server = http.createServer((req) => requests.push(req));
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, requests, url: `http://127.0.0.1:${server.address().port}/` };
}

for (const first of ['fetch', 'tethered']) {
  test(`an abort rejects the native job no later than fetch (${first} called first)`, async () => {
    const { server, requests, url } = await silentServer();
    try {
      const controller = new AbortController();
      const { signal } = controller;
      const settled = [];
      const start = {
        fetch: () => fetch(url, { signal }).then(
          () => settled.push('fetch resolved'),
          (err) => settled.push(err.name === 'AbortError' ? 'fetch' : `fetch: ${err}`),
        ),
        tethered: () => addon.spin(60_000, { signal }).then(
          () => settled.push('tethered resolved'),
          (err) => settled.push(isAbortError(err, { cause: signal.reason }) && 'tethered'),
        ),
      };
      const second = first === 'fetch' ? 'tethered' : 'fetch';
      const done = [start[first](), start[second]()];
      await waitFor('the request and the native job to be under way',
        () => requests.length === 1 && addon.live() === 1);
      controller.abort();
      // Both settle within the abort's microtasks, before any macrotask.
      await new Promise((resolve) => setImmediate(resolve));
      assert.deepEqual([...settled].sort(), ['fetch', 'tethered']);
      await Promise.all(done);
      await waitFor('the closure to return', () => addon.live() === 0, 1000);
      addon.takeStops();
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
}
