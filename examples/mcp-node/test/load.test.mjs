// 200 concurrent `spin` calls, half of them cancelled, on each transport: the cancelled ones
// stop (running or still waiting for one of the addon's pool threads), the others finish
// with `done`, nothing is left running afterwards, and the server still answers.

import { describe, it } from 'node:test';
import assert from 'node:assert/strict';

import { TRANSPORTS, spinCall, waitRunning } from './harness.mjs';

const CALLS = 200;

for (const [name, open] of Object.entries(TRANSPORTS)) {
  describe(`${name}: ${CALLS} concurrent calls`, () => {
    it(`half cancelled: those stop, the others finish, nothing is left running`, { timeout: 120_000 }, async () => {
      const s = await open();
      try {
        const cancels = [];
        const calls = [];
        for (let i = 0; i < CALLS; i++) {
          if (i % 2 === 1) {
            // Endless unless cancelled: any that was not stopped would hold a pool thread.
            const cancel = new AbortController();
            cancels.push(cancel);
            calls.push(spinCall(s.client, 3600, { signal: cancel.signal }));
          } else {
            calls.push(spinCall(s.client, 0.02));
          }
        }
        await waitRunning(s.client, 1, undefined, { atLeast: true });
        for (const cancel of cancels) cancel.abort('the test cancels half');
        const outcomes = await Promise.all(calls);
        let done = 0;
        let cancelled = 0;
        outcomes.forEach(({ result, error }, i) => {
          if (i % 2 === 1) {
            assert.ok(error, `call ${i} was cancelled`);
            cancelled++;
          } else {
            assert.deepEqual(result?.content, [{ type: 'text', text: 'done' }], `call ${i}: ${error}`);
            done++;
          }
        });
        assert.equal(done, CALLS / 2);
        assert.equal(cancelled, CALLS / 2);
        await waitRunning(s.client, 0);
        // Only the cancelled loops that had started print a stop: the others never ran.
        const stops = s.stderr.lines.filter((line) => /stopped \(Dropped: spin #\d+: the SDK aborted the request: the test cancels half\)/.test(line));
        assert.ok(stops.length >= 1 && stops.length <= CALLS / 2, `${stops.length} stops`);
        // The server still answers, and runs new work.
        assert.deepEqual((await spinCall(s.client, 0.01)).result?.content, [{ type: 'text', text: 'done' }]);
        await waitRunning(s.client, 0);
      } finally {
        await s.close();
      }
    });
  });
}
