/** /health/shadow's status: history that cannot write (a full disk) makes it degraded, with its reason shown. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildHealth } from '../../src/api/health.js';
import { Shadow } from '../../src/core/shadow.js';

const clock = { now: () => 1_700_000_000_000, mono: () => 1000 };

function inputs(history: Record<string, unknown>): Parameters<typeof buildHealth>[0] {
  const shadow = new Shadow({ maxDevices: 2, maxPoints: 4, defaultTtl: 60_000, clock });
  return {
    shadow,
    persist: { lastSaveAt: 1, lastError: null, saves: 1, seq: 1 },
    buses: { configured: ['sim'], stats: { sim: {} }, failed: new Map() },
    extra: { history },
  };
}

test('history failing to write degrades the report and names why', () => {
  assert.is(buildHealth(inputs({ lastError: null, droppedSamples: 0 })).status, 'healthy');
  const full = buildHealth(inputs({ lastError: 'ENOSPC: no space left on device, write', droppedSamples: 420 }));
  assert.is(full.status, 'degraded');
  assert.match(JSON.stringify(full.checks['history']), /ENOSPC/);
});

test.run();
