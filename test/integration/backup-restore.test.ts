/**
 * Backup, restore and factory reset end to end through real gateway processes (`src/main.ts run`, under
 * "systemd": INVOCATION_ID set, so a restore or reset exits 75 and the test starts the process again as the
 * unit would). Gateway A gets a device added live (a config version) and history; its backup restored into a
 * fresh gateway B (another data dir, another token) gives B A's config, versions and history, and A's token
 * works on B without the file holding it. Damaged, cut-short and foreign files are refused and change nothing.
 * A reset empties data_dir: B is back on its own config file.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { call, waitFor } from '../helpers/http.js';
import { cli, exited, killAll, waitReady } from '../helpers/spawn.js';
import { listBackup, makeTarGz } from '../helpers/backup.js';

const TOKEN_A = 'token-of-gateway-a-0123456789';
const TOKEN_B = 'token-of-gateway-b-9876543210';
const SYSTEMD = { INVOCATION_ID: '0123456789abcdef0123456789abcdef' };
let dir = '';

const config = (id: string, token: string, devices: unknown[]) => ({
  gateway: { id, data_dir: path.join(dir, id, 'data'), log_level: 'info' },
  http: { host: '127.0.0.1', port: 0, auth: { tokens: [token] } },
  mqtt: { enable: false },
  shadow: { persist_interval: '1s' },
  buses: [{ id: 'sim', driver: 'simulator' }],
  models: { m: { points: [{ name: 'v', type: 'int', access: 'R', sim: { fn: 'counter', step: 1 }, poll: '100ms' }] } },
  devices,
});

async function start(id: string): Promise<{ port: number; child: ReturnType<typeof cli> }> {
  const child = cli(['run', '--config', path.join(dir, id, 'config.json')], SYSTEMD);
  return { port: await waitReady(child, 30_000), child };
}

const auth = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });

async function download(port: number, token: string, history: boolean): Promise<{ status: number; type: string | null; disposition: string | null; body: Buffer }> {
  const res = await fetch(`http://127.0.0.1:${port}/api/v1/system/backup${history ? '?history=true' : ''}`, { headers: auth(token), signal: AbortSignal.timeout(20_000) });
  return { status: res.status, type: res.headers.get('content-type'), disposition: res.headers.get('content-disposition'), body: Buffer.from(await res.arrayBuffer()) };
}

const restore = (port: number, token: string, file: Buffer) => call<Record<string, unknown>>(port, '/api/v1/system/restore', {
  method: 'POST', headers: { ...auth(token), 'content-type': 'application/gzip' }, body: new Uint8Array(file),
});

/** Names and bytes of every file under data_dir's config/ (what a refused restore must leave alone). */
async function configFiles(dataDir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  const walk = async (rel: string): Promise<void> => {
    for (const e of await readdir(path.join(dataDir, rel), { withFileTypes: true })) {
      const r = path.join(rel, e.name);
      if (e.isDirectory()) await walk(r);
      else out[r] = createHash('sha256').update(await readFile(path.join(dataDir, r))).digest('hex');
    }
  };
  await walk('config');
  return out;
}

test.before.each(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-backup-'));
  for (const [id, token, devices] of [['gw-a', TOKEN_A, [{ id: 'd1', model: 'm', bus: 'sim' }]], ['gw-b', TOKEN_B, []]] as const) {
    await rm(path.join(dir, id), { recursive: true, force: true });
    await mkdir(path.join(dir, id), { recursive: true });
    await writeFile(path.join(dir, id, 'config.json'), JSON.stringify(config(id, token, [...devices])));
  }
});
test.after.each(async () => {
  killAll();
  await rm(dir, { recursive: true, force: true });
});

test('a backup of A restored into a fresh B: same config, versions and history; A\'s token works; bad files change nothing; a reset empties B', async () => {
  const a = await start('gw-a');
  // A device added live: a configuration version of its own.
  const added = await call(a.port, '/api/v1/config/device?id=d2', { method: 'PUT', headers: { ...auth(TOKEN_A), 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', bus: 'sim' }) });
  assert.ok(added.body.success, added.body.errorMsg);
  // A few samples, still in history's write buffer (it flushes every 10 s): the backup must write them first.
  await waitFor(async () => (await call<unknown[]>(a.port, '/api/v1/history?device=d1&point=v')).body.data?.length > 3, 10_000, 'history of d1');
  const a2 = a;
  const versionsA = (await call<{ version: number; summary: string }[]>(a2.port, '/api/v1/config/versions', { headers: auth(TOKEN_A) })).body.data;
  const configA = (await call<Record<string, unknown>>(a2.port, '/api/v1/config', { headers: auth(TOKEN_A) })).body.data;
  const historyA = (await call<{ ts: number }[]>(a2.port, '/api/v1/history?device=d1&point=v')).body.data;

  assert.is((await download(a2.port, 'wrong-token-123', false)).status, 401, 'a backup needs the write token');
  const plain = await download(a2.port, TOKEN_A, false);
  assert.is(plain.status, 200);
  assert.is(plain.type, 'application/gzip');
  assert.match(plain.disposition ?? '', /attachment; filename="shadowgate-backup-gw-a-\d{8}-\d{6}\.tar\.gz"/);
  const full = await download(a2.port, TOKEN_A, true);
  assert.is(full.status, 200);
  const entries = await listBackup(full.body);
  assert.equal(entries.slice(0, 3).map((e) => e.name), ['manifest.json', 'config.json', 'versions.json']);
  assert.ok(entries.some((e) => e.name.startsWith('history/')), 'history files in the file');
  assert.not.ok((await listBackup(plain.body)).some((e) => e.name.startsWith('history/')), 'no history unless asked');
  const manifest = JSON.parse(entries[0]!.text) as Record<string, unknown>;
  const hashA = `sha256:${createHash('sha256').update(TOKEN_A).digest('hex')}`;
  assert.is(manifest.format, 'shadowgate-backup');
  assert.is(manifest.format_version, 1);
  assert.is(manifest.gateway_id, 'gw-a');
  assert.equal(manifest.token_hashes, [hashA]);
  assert.ok(!Number.isNaN(Date.parse(String(manifest.created))));
  // The token itself is nowhere in the file, in the config or any version.
  assert.not.ok(entries.some((e) => e.text.includes(TOKEN_A)), 'the plain token is not in the backup');
  console.log(`backup of the test gateway: ${plain.body.length} bytes without history, ${full.body.length} bytes with (${entries.length - 3} history files)`);
  a2.child.kill('SIGTERM');
  await exited(a2.child, 15_000);

  const b = await start('gw-b');
  const dataB = path.join(dir, 'gw-b', 'data');
  const before = await configFiles(dataB);
  const cut = full.body.subarray(0, Math.floor(full.body.length / 2));
  const damaged = Buffer.from(full.body);
  damaged[Math.floor(damaged.length / 2)]! ^= 0xff;
  const foreign = gzipSync(Buffer.from('just some text, not a tar archive\n'.repeat(100)));
  // Another program's tar.gz, larger than the usual 1 MiB body limit (a restore takes more).
  const otherTar = await makeTarGz([{ name: 'etc/passwd', data: randomBytes(2 << 20) }]);
  for (const [what, file, reason] of [
    ['cut short', cut, /not a complete shadowgate backup/],
    ['damaged', damaged, /not a complete shadowgate backup/],
    ['foreign gzip', foreign, /not a complete shadowgate backup|not a shadowgate backup/],
    ['another tar.gz', otherTar, /not a shadowgate backup: it starts with "etc\/passwd"/],
    ['not gzip', Buffer.from('PK\x03\x04 a zip file'), /not a complete shadowgate backup/],
    ['empty', Buffer.alloc(0), /not a complete shadowgate backup|empty/],
  ] as const) {
    const r = await restore(b.port, TOKEN_B, file);
    assert.is(r.status, 200, what);
    assert.not.ok(r.body.success, `${what}: refused`);
    assert.match(r.body.errorMsg, /^restore refused, nothing changed: /, what);
    assert.match(r.body.errorMsg, reason, `${what}: ${r.body.errorMsg}`);
  }
  assert.is((await restore(b.port, TOKEN_A, full.body)).status, 401, 'B does not know A\'s token yet');
  assert.is(b.child.exitCode, null, 'B runs on');
  assert.equal(await configFiles(dataB), before, 'B\'s configuration files are untouched');
  assert.equal((await readdir(dataB)).filter((n) => /restore/.test(n)), [], 'nothing staged');

  const t0 = performance.now();
  const ok = await restore(b.port, TOKEN_B, full.body);
  const checked = performance.now() - t0;
  assert.ok(ok.body.success, ok.body.errorMsg);
  assert.is(ok.body.data.gateway_id, 'gw-a');
  assert.is(ok.body.data.restarting, true);
  assert.is(await exited(b.child, 15_000), 75, 'B restarts to apply it');
  const b2 = await start('gw-b');
  console.log(`restore: checked and staged in ${checked.toFixed(0)} ms; back up with it after ${(performance.now() - t0).toFixed(0)} ms (process start included)`);
  // A's token works on B; B's own keeps working (the console that restored stays logged in).
  const configB = await call<Record<string, unknown>>(b2.port, '/api/v1/config', { headers: auth(TOKEN_A) });
  assert.ok(configB.body.success, configB.body.errorMsg);
  assert.ok((await call(b2.port, '/api/v1/config', { headers: auth(TOKEN_B) })).body.success);
  const strip = (c: Record<string, unknown>) => ({ ...c, http: { ...(c.http as object), auth: null }, gateway: { ...(c.gateway as object), data_dir: null } });
  assert.equal(strip(configB.body.data), strip(configA), 'A\'s configuration runs on B (tokens and data_dir aside)');
  const devices = (await call<{ id: string }[]>(b2.port, '/api/v1/devices')).body.data.map((d) => d.id);
  assert.equal(devices, ['d1', 'd2']);
  const versionsB = (await call<{ version: number; summary: string }[]>(b2.port, '/api/v1/config/versions', { headers: auth(TOKEN_A) })).body.data;
  assert.equal(versionsB.slice(1).map((v) => [v.version, v.summary]), versionsA.map((v) => [v.version, v.summary]), 'A\'s versions, numbers kept');
  assert.match(versionsB[0]!.summary, /^restored from the backup of gw-a made /);
  const historyB = (await call<{ ts: number }[]>(b2.port, '/api/v1/history?device=d1&point=v')).body.data;
  assert.ok(historyB.length >= historyA.length && historyB[0]!.ts === historyA[0]!.ts, 'A\'s history is on B');
  const health = await call<{ checks: { lifecycle?: Record<string, unknown> } }>(b2.port, '/api/v1/health/shadow');
  assert.is(health.body.data.checks.lifecycle?.action, 'restore');
  assert.is(health.body.data.checks.lifecycle?.ok, true);
  assert.is(health.body.data.checks.lifecycle?.this_start, true);
  // Rolling back to one of A's versions keeps both tokens working.
  const back = await call(b2.port, '/api/v1/config/rollback', { method: 'POST', headers: { ...auth(TOKEN_B), 'content-type': 'application/json' }, body: JSON.stringify({ version: versionsA[versionsA.length - 1]!.version }) });
  assert.ok(back.body.success, back.body.errorMsg);
  assert.ok((await call(b2.port, '/api/v1/config', { headers: auth(TOKEN_A) })).body.success);

  // Factory reset: the id must be typed; then data_dir is emptied and B is back on its own file.
  const wrong = await call(b2.port, '/api/v1/system/reset', { method: 'POST', headers: { ...auth(TOKEN_B), 'content-type': 'application/json' }, body: JSON.stringify({ confirm: 'gw-b' }) });
  assert.not.ok(wrong.body.success);
  assert.match(wrong.body.errorMsg, /the id is gw-a/);
  assert.is(b2.child.exitCode, null);
  const reset = await call<{ restarting: boolean }>(b2.port, '/api/v1/system/reset', { method: 'POST', headers: { ...auth(TOKEN_B), 'content-type': 'application/json' }, body: JSON.stringify({ confirm: 'gw-a' }) });
  assert.ok(reset.body.success, reset.body.errorMsg);
  assert.is(await exited(b2.child, 15_000), 75);
  const b3 = await start('gw-b');
  assert.is((await call(b3.port, '/api/v1/config', { headers: auth(TOKEN_A) })).status, 401, 'A\'s token is gone with the restored config');
  assert.equal((await call<unknown[]>(b3.port, '/api/v1/devices')).body.data, []);
  const versionsAfter = (await call<{ summary: string }[]>(b3.port, '/api/v1/config/versions', { headers: auth(TOKEN_B) })).body.data;
  assert.equal(versionsAfter.map((v) => v.summary), ['configuration at start']);
  const gone = await call<unknown[]>(b3.port, '/api/v1/history?device=d1&point=v');
  assert.equal([gone.body.success, gone.body.errorMsg], [false, 'unknown device'], 'no history of A\'s devices');
  const leftover = await readdir(path.join(dataB, 'history')).catch(() => []);
  assert.not.ok(leftover.some((n) => /\.(log|seg)$/.test(n)), `history emptied: ${leftover.join(' ')}`);
  const life = (await call<{ checks: { lifecycle?: Record<string, unknown> } }>(b3.port, '/api/v1/health/shadow')).body.data.checks.lifecycle;
  assert.equal([life?.action, life?.ok, life?.source], ['reset', true, 'console']);
});

test.run();
