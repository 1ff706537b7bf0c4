/** The kills campaign, reduced (issue 15): a few SIGKILLs of the real gateway, each restart judged. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { kills } from '../../scripts/reliability/kills.js';
import { formatTable } from '../../scripts/reliability/table.js';

test('SIGKILL at random moments: restored every time, nothing corrupt, loss within one persist_interval', async () => {
  const rows = await kills({ reduced: true, log: (line) => console.log(`  ${line}`) });
  console.log(formatTable(rows));
  assert.ok(rows.length > 0, 'the campaign returned rows');
  for (const r of rows) assert.ok(r.ok, `${r.test}: ${r.note ?? r.figure}`);
});

test.run();
