/**
 * The backup writer and reader on their own: a reader that goes away mid-download ends the backup (no
 * hang holding files open); a file staged and read back keeps the versions' numbers and hashes the tokens.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { stageRestore } from '../../src/runtime/backup-read.js';
import { withHashedTokens } from '../../src/runtime/backup-format.js';
import { writeBackup } from '../../src/runtime/backup-write.js';
import { makeTarGz } from '../helpers/backup.js';

let dir = '';
test.before.each(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-backup-unit-'));
});
test.after.each(async () => {
  await rm(dir, { recursive: true, force: true });
});

const RAW = { gateway: { id: 'gw', data_dir: '/somewhere/else' }, http: { auth: { tokens: ['plain-token-1234'], read_tokens: ['reader-token-1234'] } } };
const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  Promise.race([p, new Promise<T>((_, reject) => setTimeout(() => reject(new Error(`${what}: not settled in ${ms} ms`)), ms).unref())]);

test('a reader that goes away mid-download ends the backup with an error, not a hang', async () => {
  const hist = path.join(dir, 'history');
  await mkdir(hist);
  for (let i = 0; i < 4; i++) await writeFile(path.join(hist, `${i}.seg`), randomBytes(4 << 20));
  let received = 0;
  const out = new Writable({
    write(chunk: Buffer, _enc, cb) {
      received += chunk.length;
      cb(received > 64 * 1024 ? new Error('client went away') : null);
    },
  });
  const err = await within(writeBackup({ raw: RAW, versions: [], gatewayId: 'gw', gatewayVersion: '1', historyDir: hist, now: new Date() }, out).then(() => null, (e: Error) => e), 5000, 'writeBackup');
  assert.ok(err, 'rejects');
  assert.match(String(err?.message), /client went away/);
});

test('tokens are hashed, this gateway\'s are added, versions keep their numbers, data_dir stays this gateway\'s', async () => {
  const buf = new PassThrough();
  const chunks: Buffer[] = [];
  buf.on('data', (c: Buffer) => chunks.push(c));
  await writeBackup({ raw: RAW, versions: [{ version: 7, time: 1, summary: 'seven', raw: RAW }], gatewayId: 'gw', gatewayVersion: '1', now: new Date() }, buf);
  const file = Buffer.concat(chunks);
  assert.not.ok(file.includes('plain-token-1234'));
  const dataDir = path.join(dir, 'data');
  await mkdir(dataDir);
  let validated: unknown;
  const summary = await stageRestore(Readable.from([file]), {
    dataDir, baseSha: 'abc', keepTokens: { tokens: ['mine-token-5678'], read_tokens: [] }, dataDirValue: '/here',
    validate: (raw) => void (validated = raw), now: 5, source: 'test',
  });
  assert.equal([summary.gateway_id, summary.config_versions, summary.history], ['gw', 1, false]);
  const expected = withHashedTokens({ ...RAW, gateway: { id: 'gw', data_dir: '/here' } }, { tokens: ['mine-token-5678'], read_tokens: [] }) as { http: { auth: { tokens: string[]; read_tokens: string[] } } };
  assert.equal(validated, expected);
  assert.is(expected.http.auth.tokens.length, 2);
  assert.ok(expected.http.auth.tokens.every((t) => /^sha256:[0-9a-f]{64}$/.test(t)));
  assert.equal(expected.http.auth.read_tokens, [`sha256:${createHash('sha256').update('reader-token-1234').digest('hex')}`]);
  const staged = path.join(dataDir, 'restore.pending', 'config');
  const active = JSON.parse(await readFile(path.join(staged, 'active.json'), 'utf8')) as { base_sha256: string; version: number; config: unknown };
  assert.equal([active.base_sha256, active.version, active.config], ['abc', 8, expected]);
  assert.is((await readdir(path.join(staged, 'versions'))).length, 2, 'version 7 and the restore\'s 8');
});

test('a backup of a newer format, or one with an entry that would leave history/, is refused and nothing is staged', async () => {
  const dataDir = path.join(dir, 'data');
  await mkdir(dataDir);
  const manifest = (v: number, history = false) => JSON.stringify({ format: 'shadowgate-backup', format_version: v, gateway_version: '9.0.0', gateway_id: 'gw', created: '', history });
  const opts = { dataDir, baseSha: 'x', keepTokens: { tokens: [], read_tokens: [] }, dataDirValue: undefined, validate: () => {}, now: 0, source: 'test' };
  const newer = await makeTarGz([{ name: 'manifest.json', data: manifest(99) }, { name: 'config.json', data: '{}' }, { name: 'versions.json', data: '[]' }]);
  const err1 = await stageRestore(Readable.from([newer]), opts).then(() => null, (e: Error) => e);
  assert.match(String(err1?.message), /format version 99, made by shadowgate 9\.0\.0; this gateway reads up to 1: update it first/);
  const escape = await makeTarGz([{ name: 'manifest.json', data: manifest(1, true) }, { name: 'history/../../evil', data: 'x' }]);
  const err2 = await stageRestore(Readable.from([escape]), opts).then(() => null, (e: Error) => e);
  assert.match(String(err2?.message), /unsafe name/);
  assert.equal(await readdir(dataDir), [], 'nothing staged, no leftovers');
});

test.run();
