/**
 * Carrying out a restore at start after a power cut at any step: a staging directory of a process that died
 * is removed; a swap cut between its renames is finished; a reset cut midway is done again.
 */
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { applyPending } from '../../src/runtime/lifecycle.js';

let dir = '';
test.before.each(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-lifecycle-'));
});
test.after.each(async () => {
  await rm(dir, { recursive: true, force: true });
});

const opts = () => ({ dataDir: dir, baseSha: 'x', keepTokens: { tokens: [], read_tokens: [] }, dataDirValue: undefined, validate: () => {}, now: 0 });
const put = async (rel: string, text: string): Promise<void> => {
  await mkdir(path.dirname(path.join(dir, rel)), { recursive: true });
  await writeFile(path.join(dir, rel), text);
};

test('a staging directory left by a process that died is removed; nothing else happens', async () => {
  await put('.restore-staging-4242/config/active.json', 'half');
  await put('config/active.json', 'mine');
  assert.is(await applyPending(opts(), () => {}), undefined);
  assert.equal((await readdir(dir)).sort(), ['config']);
  assert.is(await readFile(path.join(dir, 'config/active.json'), 'utf8'), 'mine');
});

test('a swap cut after the old config was moved aside is finished at the next start', async () => {
  // As the power cut left it: the old config moved aside, the staged one not yet in place.
  await put('.restore-old/config/active.json', 'old');
  await put('restore.pending/config/active.json', 'restored');
  await put('restore.pending/history/0000000001.log', 'h');
  await put('restore.pending/restore.json', JSON.stringify({ source: 'console', gateway_id: 'gw-a', created: 'then', config_versions: 3, history: true, history_files: 1 }));
  await put('history/0000000009.log', 'mine');
  const lines: string[] = [];
  const status = await applyPending(opts(), (l) => lines.push(l));
  assert.equal([status?.action, status?.ok, status?.source], ['restore', true, 'console']);
  assert.match(lines.join(), /restored the backup of gw-a made then \(3 configuration versions, 1 history files\)/);
  assert.is(await readFile(path.join(dir, 'config/active.json'), 'utf8'), 'restored');
  assert.equal(await readdir(path.join(dir, 'history')), ['0000000001.log']);
  assert.equal((await readdir(dir)).sort(), ['config', 'history', 'lifecycle.json']);
});

test('a reset empties data_dir but its lock and the update directory, then a backup handed over for the emptied directory is read', async () => {
  await put('gateway.lock', '1');
  await put('factory-reset.pending', JSON.stringify({ source: 'boot partition' }));
  await put('shadow/a', 'x');
  await put('config/active.json', 'mine');
  await put('restore-upload.tar.gz', 'not a backup');
  // The system update's directory is the root update service's (its status, a bundle it may be installing).
  await put('update/status.json', '{"state":"installing"}');
  const lines: string[] = [];
  const status = await applyPending(opts(), (l) => lines.push(l));
  assert.equal([status?.action, status?.ok], ['restore', false], 'the last outcome: the bad upload');
  assert.match(status!.message, /^factory reset, then the backup from the boot partition was not restored/);
  assert.match(lines[0]!, /factory reset/);
  assert.match(lines[1]!, /not restored: the file is not a complete shadowgate backup/);
  assert.equal((await readdir(dir)).sort(), ['gateway.lock', 'lifecycle.json', 'update']);
  assert.is(await readFile(path.join(dir, 'update/status.json'), 'utf8'), '{"state":"installing"}');
});

test.run();
