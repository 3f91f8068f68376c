// An HTTP server (node:http) whose client disconnects mid-request: the request's signal
// aborts, and the native work stops; the naive AsyncTask's runs on.
import assert from 'node:assert/strict';
import http from 'node:http';
import { test } from 'node:test';
import { addon, sleep, stopReasons, waitFor } from './helpers.mjs';

function serve() {
  const server = http.createServer((req, res) => {
    const controller = new AbortController();
    res.on('close', () => {
      if (!res.writableFinished) {
        controller.abort(new Error('the client disconnected'));
      }
    });
    const work = req.url === '/naive'
      ? addon.naiveSpin(120_000, controller.signal)
      : addon.spin(120_000, { signal: controller.signal });
    work.then((steps) => res.end(`${steps}\n`), () => res.destroy());
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => resolve(server));
  });
}

/** Starts a request to `path` and hangs up once `started()` holds. */
async function hangUp(server, path, started) {
  const { port } = server.address();
  const request = http.get({ host: '127.0.0.1', port, path });
  request.on('error', () => {});
  await waitFor('the request\'s native work to run', started, 5000);
  request.destroy();
}

test('a client that disconnects mid-request stops the native work', async () => {
  addon.takeStops();
  const server = await serve();
  try {
    await hangUp(server, '/work', () => addon.live() === 1);
    const hungUp = performance.now();
    await waitFor('the native work to stop', () => addon.live() === 0, 1000);
    assert.ok(performance.now() - hungUp < 1000);
    assert.deepEqual(stopReasons(), ['Dropped: the client disconnected']);

    // The naive server: the same hang-up, and its loop runs on.
    await hangUp(server, '/naive', () => addon.naiveLive() === 1);
    await sleep(200);
    assert.equal(addon.naiveLive(), 1, 'the naive loop stopped');
    addon.stopNaive();
    await waitFor('the naive loop to end', () => addon.naiveLive() === 0, 5000);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});
