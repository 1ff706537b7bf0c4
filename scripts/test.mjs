// `make test`: every kind of check in about 20 minutes on 2 cores, and the closing line CI reads
// ("N passed, N failed, N skipped"; uvu's own summary is not one of those). A run that executes zero tests fails.
//
// A full run is parts side by side (scripts/test-parts.mjs), each bounded in time, each printed whole when it ends:
//   typecheck    tsc over src/, test/, scripts/ and the console's JavaScript
//   suite i/N    the uvu suite over test/ in TEST_SHARDS processes (2), files split by their measured time
//                (scripts/test-weights.json) so the shards end together
//   node 22, 24  the unit tests (test/{core,protocol,config,util,api}) again on the other supported releases
//                (scripts/node-versions.mjs), started when the suite is done, beside the image's boots
//   image        the SD image built and booted under qemu, quick tier (scripts/image-test.sh): first boot,
//                one A/B update and its trial boot, one power cut
//   long         test/long/*.long.ts: a Modbus door client idle for 10 minutes (no clock to skip for an idle
//                TCP connection), started first
// and closes with each part's time and what it left to `make reliability`.
//
// TEST_PATTERN or TEST_DIR narrows the run to one uvu process, streamed, with no image and no long checks
// (TEST_LONG=1 runs them too). TEST_NODES=22,24 runs the (narrowed) selection on those releases too,
// TEST_NODES=none on none. SHADOWGATE_IMAGE_TEST=0 skips the image (counted as skipped, with the reason).
// TEST_WEIGHTS_OUT=FILE writes each suite file's measured seconds there (to refresh scripts/test-weights.json).
import { existsSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { NODE_VERSIONS, nodeDir } from './node-versions.mjs';
import { exactPattern, imageCounts, runPart, shard, testFiles, uvuCounts } from './test-parts.mjs';

const narrowed = Boolean(process.env.TEST_PATTERN || process.env.TEST_DIR);
const pattern = process.env.TEST_PATTERN ?? '.*\\.test\\.ts$';
const dir = process.env.TEST_DIR ?? 'test';
const UNIT_SET = ['core', 'protocol', 'config', 'util', 'api'];
const UNIT_PATTERN = `^(${UNIT_SET.join('|')})/.*\\.test\\.ts$`;
const SHARDS = Math.max(1, Number(process.env.TEST_SHARDS) || 2);
const WEIGHTS = path.join('scripts', 'test-weights.json');
/** What `make test` leaves to `make reliability`, said in its closing lines (README "Two tiers"). */
const RELIABILITY_ONLY = [
  'the full field campaign (200 kills, disk full, every bus fault, bad input, auth) and the 10-minute soak',
  'image: the broken config\'s reboot of its own, bundles of another key or board refused, rolling back and forward by hand,',
  '       the broken bundle\'s fallback, 10 random power cuts (the first during an install), backup restored from the card',
];

/** uvu over `testDir` with `node` (the long checks only when asked for: `long`). */
function uvu(name, node, testDir, testPattern, { long = false, stream = false, limitS = 1800, onLine } = {}) {
  const ignore = long ? [] : ['--ignore', '\\.long\\.ts$'];
  return runPart(name, node, ['--import', 'tsx', 'node_modules/uvu/bin.js', testDir, testPattern, '--no-color', ...ignore, ...process.argv.slice(2)],
    { stream, limitS, onLine }).then((r) => {
    const counts = uvuCounts(r.out);
    return { ...r, counts, ok: r.status === 0 && counts.failed === 0 && counts.total > 0 };
  });
}

/** The majors to run again on: TEST_NODES, else every other supported one on a full run. */
function otherMajors() {
  const own = process.versions.node.split('.')[0];
  const asked = process.env.TEST_NODES?.trim();
  if (asked === 'none' || (!asked && narrowed)) return [];
  return asked ? asked.split(',').map((m) => m.trim()).filter(Boolean) : Object.keys(NODE_VERSIONS).filter((m) => m !== own);
}

/** The selection again on one other release; its own line, as the closing line's parts are. */
async function onRelease(major, stream) {
  const label = `node ${NODE_VERSIONS[major] ?? major}`;
  let node;
  try {
    node = path.join(nodeDir(major), 'bin', 'node');
  } catch (err) {
    return { name: label, out: `${label}: cannot install it: ${err.message}\n`, status: 1, seconds: 0, counts: { total: 0, passed: 0, failed: 1, skipped: 0 }, ok: false };
  }
  const [testDir, testPattern] = narrowed ? [dir, pattern] : ['test', UNIT_PATTERN];
  if (stream) console.log(`\n${label}: ${narrowed ? `${testDir} ${testPattern}` : `unit tests (test/{${UNIT_SET.join(',')}})`}`);
  const r = await uvu(label, node, testDir, testPattern, { stream, limitS: 900 });
  const c = r.counts;
  const line = `${label}: ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped in ${r.seconds.toFixed(0)} s`;
  if (stream) console.log(line);
  return { ...r, out: `${r.out}\n${line}\n` };
}

const total = { passed: 0, failed: 0, skipped: 0 };
const add = (c) => {
  total.passed += c.passed;
  total.failed += c.failed;
  total.skipped += c.skipped;
};

if (narrowed) {
  // One selection, streamed as it runs: what a developer narrowing the run wants to watch.
  const long = process.env.TEST_LONG === '1' ? uvu('long', process.execPath, 'test/long', '\\.long\\.ts$', { long: true }) : null;
  const main = await uvu('suite', process.execPath, dir, pattern, { stream: true });
  add(main.counts);
  let ok = main.ok;
  for (const major of otherMajors()) {
    const r = await onRelease(major, true);
    add(r.counts);
    ok &&= r.ok;
  }
  if (long) {
    const r = await long;
    console.log(`\nlong checks:\n${r.out}`);
    add(r.counts);
    ok &&= r.ok;
  }
  console.log(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
  process.exit(ok ? 0 : 1);
}

// ---------------------------------------------------------------- a full run: the parts side by side
const started = performance.now();
const since = () => (performance.now() - started) / 1000;
const results = [];
const running = new Map();
/** Starts a part; prints it whole when it ends (parts side by side would interleave). */
function part(name, promise) {
  const at = since();
  running.set(name, at);
  return promise.then((r) => {
    running.delete(name);
    const c = r.counts;
    const ok = r.ok ?? (r.status === 0 && c.failed === 0);
    results.push({ ...r, name, at, ok });
    add(c);
    console.log(`\n======== ${name}: ${ok ? 'ok' : 'FAILED'} in ${r.seconds.toFixed(0)} s (${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped)\n${r.out.trimEnd()}\n======== end of ${name}`);
    return r;
  });
}
// A line every 2 minutes: a CI log that says nothing for 15 minutes looks hung.
const beat = setInterval(() => {
  console.log(`[make test +${since().toFixed(0)} s] running: ${[...running].map(([n, at]) => `${n} (${(since() - at).toFixed(0)} s)`).join(', ')}`);
}, 120_000);

const typecheck = part('typecheck', (async () => {
  const out = [];
  let failed = 0;
  const projects = ['tsconfig.json', 'tsconfig.console.json'].filter((p) => existsSync(p));
  for (const project of projects) {
    const r = await runPart(`tsc ${project}`, process.execPath, ['node_modules/typescript/bin/tsc', '-p', project, '--noEmit'], { limitS: 600 });
    out.push(`tsc -p ${project} --noEmit: ${r.status === 0 ? 'ok' : 'FAILED'} in ${r.seconds.toFixed(0)} s\n${r.out}`);
    if (r.status !== 0) failed++;
  }
  return { out: out.join(''), status: failed ? 1 : 0, seconds: since(), counts: { total: projects.length, passed: projects.length - failed, failed, skipped: 0 } };
})());
const long = part('long', uvu('long', process.execPath, 'test/long', '\\.long\\.ts$', { long: true, limitS: 1200 }));
const image = part('image', runPart('image', 'bash', ['scripts/image-test.sh'], { env: { SHADOWGATE_IMAGE_TIER: 'quick' }, limitS: 2400 })
  .then((r) => ({ ...r, counts: imageCounts(r.out) })));

const weights = {};
const shards = shard(testFiles('test'), SHARDS, WEIGHTS);
const suite = Promise.all(shards.map((s, i) => {
  let current = '';
  let from = 0;
  const files = new Set(s.files);
  // uvu prints a file's name on a line of its own as it starts it: the time between two such lines is the file's.
  const onLine = (line, at) => {
    const name = line.trim();
    if (!files.has(name)) return;
    if (current) weights[current] = Number((at - from).toFixed(1));
    current = name;
    from = at;
  };
  const name = SHARDS > 1 ? `suite ${i + 1}/${SHARDS}` : 'suite';
  return part(name, uvu(name, process.execPath, 'test', exactPattern(s.files), { limitS: 1800, onLine }).then((r) => {
    if (current) weights[current] = Number((r.seconds - from).toFixed(1));
    return { ...r, out: `${s.files.length} files, ${s.seconds.toFixed(0)} s by scripts/test-weights.json\n${r.out}` };
  }));
}));
// The other releases once the suite is done: beside the image's boots, not beside the suite's heavy files.
const releases = suite.then(() => Promise.all(otherMajors().map((m) => part(`node ${NODE_VERSIONS[m] ?? m}`, onRelease(m, false)))));

await Promise.all([typecheck, long, image, suite, releases]);
clearInterval(beat);
if (process.env.TEST_WEIGHTS_OUT) writeFileSync(process.env.TEST_WEIGHTS_OUT, `${JSON.stringify(Object.fromEntries(Object.entries(weights).sort()), null, 1)}\n`);

const suiteTotal = results.filter((r) => r.name.startsWith('suite')).reduce((n, r) => n + (r.counts.total || 0), 0);
console.log(`\nmake test: parts (wall seconds; started at +s from the start)`);
for (const r of [...results].sort((a, b) => a.at - b.at || a.name.localeCompare(b.name))) {
  const c = r.counts;
  console.log(`  ${r.name.padEnd(16)} ${(r.ok ? 'ok' : 'FAILED').padEnd(7)} ${r.seconds.toFixed(0).padStart(5)} s  (+${r.at.toFixed(0)})  ${c.passed} passed, ${c.failed} failed, ${c.skipped} skipped`);
}
console.log(`  all parts        ${since().toFixed(0)} s`);
console.log(`left to \`make reliability\` (the long tier):\n${RELIABILITY_ONLY.map((l) => `  ${l}`).join('\n')}`);
const ok = results.every((r) => r.ok) && suiteTotal > 0 && total.failed === 0;
console.log(`${total.passed} passed, ${total.failed} failed, ${total.skipped} skipped`);
process.exit(ok ? 0 : 1);
