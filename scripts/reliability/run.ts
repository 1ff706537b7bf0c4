/**
 * `make reliability` (issue 15): every campaign against the real gateway process (dist/main.js), one table,
 * build/reliability.md, exit 1 on any miss. `--reduced` runs the short set (what `make test` runs through
 * test/reliability/). `--only NAME[,NAME]` runs some campaigns; `--trials REGEX` only the trials of a campaign
 * whose name it matches (bus-faults: e.g. `--only bus-faults --trials 'second master'`; its baseline always runs).
 * `--no-report` leaves build/reliability.md alone (a test that runs a campaign in a process of its own).
 */
import os from 'node:os';
import { parseArgs } from 'node:util';
import { formatTable, writeReport, type Campaign, type Row } from './table.js';

const CAMPAIGNS: Record<string, () => Promise<Campaign>> = {
  kills: async () => (await import('./kills.js')).kills,
  'disk-full': async () => (await import('./disk-full.js')).diskFull,
  'bus-faults': async () => (await import('./bus-faults.js')).busFaults,
  'bad-input': async () => (await import('./bad-input.js')).badInput,
  auth: async () => (await import('./auth.js')).auth,
  soak: async () => (await import('./soak.js')).soak,
};

const { values } = parseArgs({ options: { reduced: { type: 'boolean' }, only: { type: 'string' }, trials: { type: 'string' }, 'no-report': { type: 'boolean' } } });
const reduced = values.reduced === true;
const trials = values.trials ? new RegExp(values.trials, 'i') : undefined;
const names = values.only ? values.only.split(',') : Object.keys(CAMPAIGNS);
const rows: Row[] = [];
const started = new Date();
for (const name of names) {
  const load = CAMPAIGNS[name];
  if (!load) {
    console.error(`unknown campaign ${name} (${Object.keys(CAMPAIGNS).join(', ')})`);
    process.exit(2);
  }
  const t0 = performance.now();
  console.log(`== ${name}${reduced ? ' (reduced)' : ''}`);
  try {
    rows.push(...await (await load())({ reduced, log: (line) => console.log(`   ${line}`), ...(trials ? { trials } : {}) }));
  } catch (err) {
    rows.push({ test: name, trials: 0, survived: 0, lost: '?', figure: 'campaign crashed', goal: 'runs to the end', ok: false, note: (err as Error).stack ?? String(err) });
  }
  console.log(`   ${name}: ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}
const header = `${reduced ? 'Reduced set' : 'Full campaign'}, ${started.toISOString()}, ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? '?'}, node ${process.version}.`;
console.log(`\n${formatTable(rows)}`);
if (!values['no-report']) {
  await writeReport(rows, header);
  console.log('\nwritten to build/reliability.md');
}
process.exit(rows.every((r) => r.ok) ? 0 : 1);
