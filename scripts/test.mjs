// Runs uvu over test/ through tsx, streaming its output, and prints the closing line CI reads
// ("N passed, N failed, N skipped"); uvu's own summary is not one of those.
// A run that executes zero tests fails: a green "no tests" run hides breakage.
// Then the unit tests (UNIT_SET: pure logic, config, the REST API over real HTTP; about a minute) run
// again on each other supported Node.js release (scripts/node-versions.mjs: 20, 22 and 24, official
// binaries from npm), and the SD image test (scripts/image-test.sh: build + qemu boot) runs; both unless
// TEST_PATTERN or TEST_DIR narrows the run. TEST_NODES=22,24 runs the (narrowed) selection on those
// releases too, TEST_NODES=none on none. Their counts and the image's "image: N passed, N failed,
// N skipped" join the total.
// The long checks (test/long/*.long.ts: a door client idle for 10 minutes) cannot be made faster — the kernel
// has no clock to skip for an idle TCP connection — so they start with the suite, run beside it in their
// own process, and are read at the end: on a full run they cost wall time only if the rest took less.
// TEST_LONG=1 runs them with a narrowed run too.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { NODE_VERSIONS, nodeDir } from './node-versions.mjs';

const narrowed = Boolean(process.env.TEST_PATTERN || process.env.TEST_DIR);
const pattern = process.env.TEST_PATTERN ?? '.*\\.test\\.ts$';
const dir = process.env.TEST_DIR ?? 'test';
const UNIT_SET = ['core', 'protocol', 'config', 'util', 'api'];
const UNIT_PATTERN = `^(${UNIT_SET.join('|')})/.*\\.test\\.ts$`;

/**
 * uvu over `testDir` with `node`, its output streamed (or kept); resolves with the output and the exit status.
 * The long checks run only as such (`long`): a TEST_PATTERN that happens to match one does not run it twice.
 */
function uvu(node, testDir, testPattern, { stream = true, long = false } = {}) {
  return new Promise((resolve) => {
    const ignore = long ? [] : ['--ignore', '\\.long\\.ts$'];
    const child = spawn(node, ['--import', 'tsx', 'node_modules/uvu/bin.js', testDir, testPattern, '--no-color', ...ignore, ...process.argv.slice(2)],
      { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      if (stream) process.stdout.write(chunk);
    });
    child.on('error', (err) => resolve({ out: `${out}\n${err.message}`, status: 1 }));
    child.on('close', (status) => resolve({ out, status }));
  });
}

const counts = (text) => {
  const num = (k) => Number((text.match(new RegExp(`^\\s*${k}:\\s+(\\d+)`, 'm')) ?? [])[1] ?? NaN);
  const total = num('Total');
  const passed = num('Passed') || 0;
  // uvu's Total excludes skipped tests; tests that skip print their reason as "SKIP: …".
  const skipped = num('Skipped') || 0;
  const failed = Number.isNaN(total) ? Math.max(1, (text.match(/✘/g) ?? []).length) : total - passed;
  return { total, passed, failed, skipped };
};

/** The majors to run again on: TEST_NODES, else every other supported one on a full run. */
function otherMajors() {
  const own = process.versions.node.split('.')[0];
  const asked = process.env.TEST_NODES?.trim();
  if (asked === 'none' || (!asked && narrowed)) return [];
  return asked ? asked.split(',').map((m) => m.trim()).filter(Boolean) : Object.keys(NODE_VERSIONS).filter((m) => m !== own);
}

async function otherNodes() {
  const total = { passed: 0, failed: 0, skipped: 0, ok: true };
  for (const major of otherMajors()) {
    const t0 = performance.now();
    let node;
    try {
      node = path.join(nodeDir(major), 'bin', 'node');
    } catch (err) {
      console.log(`node ${major}: cannot install it: ${err.message}`);
      total.failed++;
      total.ok = false;
      continue;
    }
    const [testDir, testPattern] = narrowed ? [dir, pattern] : ['test', UNIT_PATTERN];
    console.log(`\nnode ${NODE_VERSIONS[major] ?? major}: ${narrowed ? `${testDir} ${testPattern}` : `unit tests (test/{${UNIT_SET.join(',')}})`}`);
    const run = await uvu(node, testDir, testPattern);
    const c = counts(run.out);
    total.passed += c.passed;
    total.failed += c.failed;
    total.skipped += c.skipped;
    total.ok &&= run.status === 0 && c.failed === 0 && c.total > 0;
    console.log(`node ${NODE_VERSIONS[major] ?? major}: ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  }
  return total;
}

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

const longStarted = performance.now();
const long = !narrowed || process.env.TEST_LONG === '1' ? uvu(process.execPath, 'test/long', '\\.long\\.ts$', { stream: false, long: true }) : null;
const main = await uvu(process.execPath, dir, pattern);
const unit = counts(main.out);
let { passed, failed, skipped } = unit;
const others = await otherNodes();
passed += others.passed;
failed += others.failed;
skipped += others.skipped;
let imageStatus = 0;
if (!narrowed) {
  const img = await imageTest();
  passed += img.passed;
  failed += img.failed;
  skipped += img.skipped;
  imageStatus = img.status ?? 1;
}
let longOk = true;
if (long) {
  const waitFrom = performance.now();
  const run = await long;
  const c = counts(run.out);
  console.log(`\nlong checks (test/long, started with the suite):\n${run.out}`);
  console.log(`long checks: ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped in ${((performance.now() - longStarted) / 1000).toFixed(0)} s; ` +
    `the suite waited ${((performance.now() - waitFrom) / 1000).toFixed(0)} s for them`);
  passed += c.passed;
  failed += c.failed;
  skipped += c.skipped;
  longOk = run.status === 0 && c.failed === 0 && c.total > 0;
}
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(main.status !== 0 || imageStatus !== 0 || !others.ok || !longOk || failed > 0 || !(unit.total > 0) ? 1 : 0);
