/** The auth campaign's reduced set (issue 15 item 5) against the real gateway: every row must meet its goal. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { auth } from '../../scripts/reliability/auth.js';
import { formatTable } from '../../scripts/reliability/table.js';

test('auth (reduced): write routes refused, MQTT ACLs hold, no secret leaks, guessing slowed, sandbox ≤ 2.5', async () => {
  const rows = await auth({ reduced: true, log: (line) => console.log(`  ${line}`) });
  console.log(formatTable(rows));
  assert.ok(rows.length >= 11, `${rows.length} rows`);
  for (const r of rows) assert.ok(r.ok, `${r.test}: ${r.figure} (goal ${r.goal})${r.note ? ` — ${r.note}` : ''}`);
});

test.run();
