// Type-checked by `tsc` (test/types.test.mjs), never run: a server written in TypeScript against
// tethered-mcp.d.mts, as a user would, and the mistakes its types must refuse.
import * as z from 'zod';
import { serve, Stopped, rpcError, tether } from '../tethered-mcp.mjs';

const schema = z.strictObject({ seconds: z.number() });

await serve({
  name: 'typed',
  version: '0.0.0',
  running: () => 0,
  tools: {
    spin: {
      description: 'spin',
      schema,
      async run({ seconds }, { signal }) {
        const ms: number = seconds * 1000;
        // @ts-expect-error each tool's arguments have its schema's type: `seconds` is a number
        const wrong: string = seconds;
        signal.throwIfAborted();
        if (signal.reason instanceof Stopped) throw rpcError(-32603, signal.reason.message);
        return { content: [{ type: 'text', text: String(ms) }] };
      },
    },
  },
});

const { signal, release } = tether('call', [[new AbortController().signal, 'what']]);
signal.aborted satisfies boolean;
release();

// @ts-expect-error a tool's run must resolve to a tool result
await serve({ name: 'x', version: '0', tools: { t: { description: '', schema, async run() { return 1; } } } });
// @ts-expect-error the name is required
await serve({ version: '0', tools: {} });
