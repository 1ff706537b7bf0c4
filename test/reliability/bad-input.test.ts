/** The bad-input campaign's reduced set (issue 15 item 4) against the real gateway: every row must meet its goal. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { badInput } from '../../scripts/reliability/bad-input.js';
import { formatTable } from '../../scripts/reliability/table.js';

test('bad input (reduced): 0 crashes, envelopes only, nothing written, malformed connections closed, RSS < +10%', async () => {
  const rows = await badInput({ reduced: true, log: (line) => console.log(`  ${line}`) });
  console.log(formatTable(rows));
  assert.ok(rows.length >= 7, `${rows.length} rows`);
  for (const r of rows) assert.ok(r.ok, `${r.test}: ${r.figure} (goal ${r.goal})${r.note ? ` — ${r.note}` : ''}`);
});

test.run();
