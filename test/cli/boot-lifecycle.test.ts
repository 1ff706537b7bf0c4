/**
 * A backup or a factory reset left on the boot partition, the way the SD image applies it: `shadowgate
 * boot-config` (the boot unit's command, every path in a temp dir: --root, so no mount is run) hands it to
 * the gateway's data_dir and removes it from the boot partition; the gateway (`run`, a real process) carries
 * it out at its start. Each is applied once; a bad file is reported in /health/shadow and changes nothing.
 */
import { copyFile, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { call } from '../helpers/http.js';
import { cli, exited, killAll, runCli, waitReady } from '../helpers/spawn.js';

const TOKEN_A = 'token-of-the-old-card-0123456789';
let root = '';

const MODELS = { m: { points: [{ name: 'v', type: 'int', access: 'R', sim: { fn: 'constant', value: 7 } }] } };
const auth = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` });
const boot = () => runCli(['boot-config', '--root', root, '--dir', path.join(root, 'data/config'), '--source', path.join(root, 'boot/shadowgate.json'), '--fallback', path.join(root, 'fallback.json')]);
const bootFiles = async (): Promise<string[]> => (await readdir(path.join(root, 'boot'))).sort();
const apiToken = async (): Promise<string> => (await readFile(path.join(root, 'data/config/api-token'), 'utf8')).trim();

async function gateway(config: string, env: NodeJS.ProcessEnv = {}): Promise<{ port: number; stop: () => Promise<void> }> {
  const child = cli(['run', '--config', config], env);
  const port = await waitReady(child, 30_000);
  return { port, stop: async () => {
    child.kill('SIGTERM');
    assert.is(await exited(child, 15_000), 0);
  } };
}

type Health = { status: string; checks: { lifecycle?: Record<string, unknown> } };
const health = async (port: number) => (await call<Health>(port, '/api/v1/health/shadow')).body.data;
const devices = async (port: number) => (await call<{ id: string }[]>(port, '/api/v1/devices')).body.data.map((d) => d.id);

test.before(async () => {
  root = await mkdtemp(path.join(os.tmpdir(), 'sg-bootlife-'));
  await mkdir(path.join(root, 'boot'), { recursive: true });
  await mkdir(path.join(root, 'old'), { recursive: true });
  await writeFile(path.join(root, 'fallback.json'), JSON.stringify({ gateway: { id: 'image-default' } }));
  // The old card: its backup, taken over REST.
  await writeFile(path.join(root, 'old/config.json'), JSON.stringify({
    gateway: { id: 'old-card', data_dir: path.join(root, 'old/data') }, http: { host: '127.0.0.1', port: 0, auth: { tokens: [TOKEN_A] } },
    mqtt: { enable: false }, buses: [{ id: 'sim', driver: 'simulator' }], models: MODELS, devices: [{ id: 'd1', model: 'm', bus: 'sim' }],
  }));
  const old = await gateway(path.join(root, 'old/config.json'));
  const res = await fetch(`http://127.0.0.1:${old.port}/api/v1/system/backup?history=true`, { headers: auth(TOKEN_A), signal: AbortSignal.timeout(10_000) });
  assert.is(res.status, 200);
  await writeFile(path.join(root, 'old/backup.tar.gz'), Buffer.from(await res.arrayBuffer()));
  await old.stop();
  // The new card's boot partition: a config without devices (and no token: boot-config makes one).
  await writeFile(path.join(root, 'boot/shadowgate.json'), JSON.stringify({
    gateway: { id: 'new-card', data_dir: path.join(root, 'data/shadowgate') }, http: { host: '127.0.0.1', port: 0 },
    mqtt: { enable: false }, buses: [{ id: 'sim', driver: 'simulator' }], models: MODELS, devices: [],
  }));
});
test.after(async () => {
  killAll();
  await rm(root, { recursive: true, force: true });
});

const CONFIG = (): string => path.join(root, 'data/config/config.json');

test('a backup on the boot partition of a fresh card is restored at the first boot, once', async () => {
  await copyFile(path.join(root, 'old/backup.tar.gz'), path.join(root, 'boot/shadowgate-restore.tar.gz'));
  const r = await boot();
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /shadowgate-restore\.tar\.gz handed to the gateway/);
  assert.equal(await bootFiles(), ['shadowgate.json'], 'taken off the boot partition');
  const generated = await apiToken();
  const g = await gateway(CONFIG());
  assert.equal(await devices(g.port), ['d1']);
  assert.ok((await call(g.port, '/api/v1/config', { headers: auth(TOKEN_A) })).body.success, 'the old card\'s token works');
  assert.ok((await call(g.port, '/api/v1/config', { headers: auth(generated) })).body.success, 'the token on this card\'s console banner works too');
  const h = await health(g.port);
  assert.equal([h.checks.lifecycle?.action, h.checks.lifecycle?.ok, h.checks.lifecycle?.source, h.checks.lifecycle?.this_start], ['restore', true, 'boot partition', true]);
  await g.stop();

  // The next boot finds nothing to do, and the restored config stays.
  const again = await boot();
  assert.is(again.code, 0, again.stderr);
  assert.not.match(again.stdout, /handed to the gateway/);
  const g2 = await gateway(CONFIG());
  assert.equal(await devices(g2.port), ['d1']);
  const versions = (await call<{ summary: string }[]>(g2.port, '/api/v1/config/versions', { headers: auth(TOKEN_A) })).body.data;
  assert.is(versions.filter((v) => v.summary.startsWith('restored from the backup')).length, 1, 'restored once');
  assert.is((await health(g2.port)).checks.lifecycle?.this_start, false);
  await g2.stop();
});

test('a cut-short backup on the boot partition is refused, reported in health and removed; the gateway runs on what it had', async () => {
  const file = await readFile(path.join(root, 'old/backup.tar.gz'));
  await writeFile(path.join(root, 'boot/shadowgate-restore.tar.gz'), file.subarray(0, file.length - 40));
  assert.is((await boot()).code, 0);
  assert.equal(await bootFiles(), ['shadowgate.json']);
  const g = await gateway(CONFIG());
  const h = await health(g.port);
  assert.is(h.status, 'degraded');
  assert.is(h.checks.lifecycle?.ok, false);
  assert.match(String(h.checks.lifecycle?.message), /not restored: the file is not a complete shadowgate backup/);
  assert.equal(await devices(g.port), ['d1'], 'the earlier restore still runs');
  assert.not.ok((await readdir(path.join(root, 'data/shadowgate'))).some((n) => /restore/.test(n)), 'nothing left to apply');
  await g.stop();
});

test('a factory-reset file on the boot partition empties data_dir and makes a new token, once', async () => {
  const oldToken = await apiToken();
  await writeFile(path.join(root, 'boot/shadowgate-factory-reset'), '');
  const r = await boot();
  assert.is(r.code, 0, r.stderr);
  assert.equal(await bootFiles(), ['shadowgate.json']);
  const token = await apiToken();
  assert.is.not(token, oldToken, 'a new token');
  const g = await gateway(CONFIG());
  assert.equal(await devices(g.port), [], 'back on the boot partition\'s config');
  assert.is((await call(g.port, '/api/v1/config', { headers: auth(TOKEN_A) })).status, 401);
  assert.is((await call(g.port, '/api/v1/config', { headers: auth(oldToken) })).status, 401);
  assert.ok((await call(g.port, '/api/v1/config', { headers: auth(token) })).body.success);
  const life = (await health(g.port)).checks.lifecycle;
  assert.equal([life?.action, life?.ok, life?.source], ['reset', true, 'boot partition']);
  await g.stop();
});

test.run();
