// Runs uvu over test/ through tsx, streaming its output, and prints the closing line CI reads
// ("N passed, N failed, N skipped"); uvu's own summary is not one of those.
// A run that executes zero tests fails: a green "no tests" run hides breakage.
import { spawn } from 'node:child_process';

const pattern = process.env.TEST_PATTERN ?? '.*\\.test\\.ts$';
const dir = process.env.TEST_DIR ?? 'test';
const child = spawn(process.execPath,
  ['--import', 'tsx', 'node_modules/uvu/bin.js', dir, pattern, '--no-color', ...process.argv.slice(2)],
  { stdio: ['ignore', 'pipe', 'inherit'] });
let out = '';
child.stdout.on('data', (chunk) => {
  out += chunk;
  process.stdout.write(chunk);
});
child.on('close', (status) => {
  const num = (k) => Number((out.match(new RegExp(`^\\s*${k}:\\s+(\\d+)`, 'm')) ?? [])[1] ?? NaN);
  const total = num('Total');
  const passed = num('Passed') || 0;
  // uvu's Total excludes skipped tests; tests that skip print their reason as "SKIP: …".
  const skipped = num('Skipped') || 0;
  const failed = Number.isNaN(total) ? Math.max(1, (out.match(/✘/g) ?? []).length) : total - passed;
  console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
  process.exit(status !== 0 || failed > 0 || !(total > 0) ? 1 : 0);
});
