/**
 * The bus-faults campaign (issue 15 item 3), reduced: each fault once for a few seconds against the real
 * gateway on the fault wire; every row must meet its goal.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { busFaults } from '../../scripts/reliability/bus-faults.js';
import { formatTable } from '../../scripts/reliability/table.js';

test('bus faults (reduced): healthy units keep their rate, dead units follow the rules, no corrupted value, no collision by the gateway', async () => {
  const rows = await busFaults({ reduced: true, log: (line) => console.log(`  ${line}`) });
  console.log(formatTable(rows));
  assert.ok(rows.length > 0, 'the campaign returned rows');
  for (const row of rows) assert.ok(row.ok, `${row.test}: ${row.figure}${row.note ? ` — ${row.note}` : ''}`);
});

test.run();
