/**
 * The bad-input campaign's reduced set against the real gateway: every row must meet its goal. Memory: no
 * growth from the second to the third round of bad input beyond what noise reaches (RSS +8 MiB, V8 heap +1 MiB);
 * `make reliability` keeps the full run's RSS < +10% vs. a warm-up.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { badInput } from '../../scripts/reliability/bad-input.js';
import { formatTable } from '../../scripts/reliability/table.js';

test('bad input (reduced): 0 crashes, envelopes only, nothing written, malformed connections closed, no memory growth round 2 → 3', async () => {
  const rows = await badInput({ reduced: true, log: (line) => console.log(`  ${line}`) });
  console.log(formatTable(rows));
  assert.ok(rows.length >= 7, `${rows.length} rows`);
  for (const r of rows) assert.ok(r.ok, `${r.test}: ${r.figure} (goal ${r.goal})${r.note ? ` — ${r.note}` : ''}`);
});

test.run();
