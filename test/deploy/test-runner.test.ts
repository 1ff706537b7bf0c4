/**
 * scripts/test.mjs runs the selection again on the other supported Node.js releases (TEST_NODES), with each
 * release's own binary, and adds their counts to the closing line CI reads; a failure on any release fails
 * the run. A throwaway test directory inside the checkout (so tsx and uvu resolve) holds the probes; the
 * long checks stay off in the probe runs (TEST_LONG of an outer run would start them, 10 minutes each).
 */
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { NODE_VERSIONS } from '../../scripts/node-versions.mjs';
import { run } from './run.js';

let dir = '';

test.before(async () => {
  await mkdir(path.resolve('build'), { recursive: true });
  dir = await mkdtemp(path.resolve('build', '.test-runner-'));
  await writeFile(path.join(dir, 'version.test.ts'), [
    "import { test } from 'uvu';",
    "test('reports its node', () => { console.log(`running on ${process.version}`); });",
    "test('fails on 24 only', () => { if (process.env.FAIL_ON === process.versions.node.split('.')[0]) throw new Error('failed on purpose'); });",
    'test.run();',
  ].join('\n'));
});

test.after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('TEST_NODES=24: the selection runs on this node, then on Node 24 itself; the counts add up', async () => {
  const r = await run(process.execPath, ['scripts/test.mjs'], { TEST_DIR: path.relative(process.cwd(), dir), TEST_NODES: '24', TEST_LONG: '', TEST_PATTERN: 'version\\.test\\.ts$' }, 120_000);
  assert.is(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, new RegExp(`running on ${process.version.replace(/\./g, '\\.')}\\n`));
  assert.match(r.stdout, new RegExp(`running on v${NODE_VERSIONS[24]!.replace(/\./g, '\\.')}\\n`));
  assert.match(r.stdout, new RegExp(`^node ${NODE_VERSIONS[24]!.replace(/\./g, '\\.')}: 2 passed, 0 failed, 0 skipped in \\d+ s$`, 'm'));
  assert.match(r.stdout, /^4 passed, 0 failed, 0 skipped$/m);
});

test('a test failing only on Node 24 fails the run', async () => {
  const r = await run(process.execPath, ['scripts/test.mjs'], { TEST_DIR: path.relative(process.cwd(), dir), TEST_NODES: '24', TEST_LONG: '', TEST_PATTERN: 'version\\.test\\.ts$', FAIL_ON: '24' }, 120_000);
  assert.is(r.code, 1, r.stdout);
  assert.match(r.stdout, /^3 passed, 1 failed, 0 skipped$/m);
});

test.run();
