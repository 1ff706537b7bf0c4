/** A fire-and-forget publish that rejects is logged, never an unhandled rejection (which ends the gateway). */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { pino } from 'pino';
import { settle } from '../../src/util/settle.js';

test('a rejected fire-and-forget promise is logged and does not reach unhandledRejection', async () => {
  const lines: string[] = [];
  const log = pino({ level: 'info' }, { write: (l: string) => void lines.push(l) });
  const unhandled: unknown[] = [];
  const on = (r: unknown): void => void unhandled.push(r);
  process.on('unhandledRejection', on);
  try {
    settle(Promise.reject(new Error('broker closed')), log, 'bridge state publish');
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(unhandled, []);
    assert.ok(lines.some((l) => /bridge state publish failed/.test(l) && /broker closed/.test(l)), lines.join('\n'));
  } finally {
    process.off('unhandledRejection', on);
  }
});

test.run();
