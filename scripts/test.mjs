// Runs uvu over test/ through tsx and prints the closing line CI reads
// ("N passed, N failed, N skipped"); uvu's own summary is not one of those.
// A run that executes zero tests fails: a green "no tests" run hides breakage.
import { spawnSync } from 'node:child_process';

const pattern = process.env.TEST_PATTERN ?? '.*\\.test\\.ts$';
const dir = process.env.TEST_DIR ?? 'test';
const r = spawnSync(process.execPath,
  ['--import', 'tsx', 'node_modules/uvu/bin.js', dir, pattern, '--no-color', ...process.argv.slice(2)],
  { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 256 * 1024 * 1024 });
process.stdout.write(r.stdout ?? '');
const num = (k) => Number((r.stdout?.match(new RegExp(`^\\s*${k}:\\s+(\\d+)`, 'm')) ?? [])[1] ?? NaN);
const total = num('Total');
const passed = num('Passed') || 0;
// uvu's Total excludes skipped tests; tests that skip print their reason (test/helpers/skip.ts).
const skipped = num('Skipped') || 0;
const failed = Number.isNaN(total) ? 1 : total - passed;
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(r.status !== 0 || failed > 0 || !(total > 0) ? 1 : 0);
