/** The disk-full campaign, reduced (issue 15): one fill/free cycle of the real gateway's data dir (root: a tmpfs). */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { diskFull } from '../../scripts/reliability/disk-full.js';
import { diskFullUnavailable } from '../../scripts/reliability/disk-full/mount.js';
import { formatTable } from '../../scripts/reliability/table.js';
import { needs } from '../helpers/peers.js';

const why = diskFullUnavailable();
const rootTest = needs(why, 'disk-full');

rootTest('disk full and freed: serves from memory, degraded with the reason, drops counted, resumes by itself', async () => {
  const rows = await diskFull({ reduced: true, log: (line) => console.log(`  ${line}`) });
  console.log(formatTable(rows));
  assert.ok(rows.length > 0, 'the campaign returned rows');
  for (const r of rows) assert.ok(r.ok, `${r.test}: ${r.note ?? r.figure}`);
});

test.run();
