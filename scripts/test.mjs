// Runs uvu over test/ through tsx, streaming its output, and prints the closing line CI reads
// ("N passed, N failed, N skipped"); uvu's own summary is not one of those.
// A run that executes zero tests fails: a green "no tests" run hides breakage.
// Then the SD image test (scripts/image-test.sh: build + qemu boot) runs, unless TEST_PATTERN or
// TEST_DIR narrows the run; its "image: N passed, N failed, N skipped" joins the total.
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
const counts = (text) => {
  const num = (k) => Number((text.match(new RegExp(`^\\s*${k}:\\s+(\\d+)`, 'm')) ?? [])[1] ?? NaN);
  const total = num('Total');
  const passed = num('Passed') || 0;
  // uvu's Total excludes skipped tests; tests that skip print their reason as "SKIP: …".
  const skipped = num('Skipped') || 0;
  const failed = Number.isNaN(total) ? Math.max(1, (text.match(/✘/g) ?? []).length) : total - passed;
  return { total, passed, failed, skipped };
};

function imageTest() {
  return new Promise((resolve) => {
    const img = spawn('bash', ['scripts/image-test.sh'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    img.stdout.on('data', (chunk) => {
      text += chunk;
      process.stdout.write(chunk);
    });
    img.on('close', (status) => {
      const m = text.match(/^image: (\d+) passed, (\d+) failed, (\d+) skipped$/m);
      if (!m) resolve({ passed: 0, failed: 1, skipped: 0, status: status || 1 });
      else resolve({ passed: Number(m[1]), failed: Number(m[2]), skipped: Number(m[3]), status });
    });
  });
}

child.on('close', async (status) => {
  const unit = counts(out);
  let { passed, failed, skipped } = unit;
  let imageStatus = 0;
  if (!process.env.TEST_PATTERN && !process.env.TEST_DIR) {
    const img = await imageTest();
    passed += img.passed;
    failed += img.failed;
    skipped += img.skipped;
    imageStatus = img.status ?? 1;
  }
  console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
  process.exit(status !== 0 || imageStatus !== 0 || failed > 0 || !(unit.total > 0) ? 1 : 0);
});
