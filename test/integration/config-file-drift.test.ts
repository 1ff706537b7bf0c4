/**
 * The config file edited after the console applied changes: the file wins (the last edit counts), and the
 * gateway says what the file undid — in the log, in /health/shadow and at GET /config/file-drift — and
 * returns to the console's version on one request, which the next start keeps. From the real `run`.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hashPassword } from '../../src/export/auth.js';
import { call } from '../helpers/http.js';
import { cli, exited, killAll, waitReady } from '../helpers/spawn.js';

let dir = '';
test.before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-drift-'));
});
test.after(async () => {
  killAll();
  await rm(dir, { recursive: true, force: true });
});

const fileConfig = (extraDevices: unknown[] = []): Record<string, unknown> => ({
  gateway: { id: 'drift' },
  http: { host: '127.0.0.1' },
  mqtt: { host: '127.0.0.1' },
  history: { enable: false },
  buses: [{ id: 'sim', driver: 'simulator' }],
  models: { m: { points: [{ name: 'n', type: 'int', sim: { fn: 'counter' } }] } },
  devices: [{ id: 'd1', model: 'm', bus: 'sim' }, ...extraDevices],
});

const json = (method: string, body: unknown): RequestInit => ({ method, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

async function run(file: string, dataDir: string): Promise<{ port: number; out: () => string; stop: () => Promise<void> }> {
  const child = cli(['run', '--config', file], {
    SHADOWGATE_DATA_DIR: dataDir, SHADOWGATE_HTTP_PORT: '0', SHADOWGATE_MQTT_PORT: '0', SHADOWGATE_MQTT_WS_PORT: '0',
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const port = await waitReady(child);
  return {
    port, out: () => out,
    stop: async () => {
      child.kill('SIGTERM');
      assert.is(await exited(child), 0);
    },
  };
}

interface Drift { consoleVersion: number; entries: { path: string; change: string }[]; fileVersion: number; lost: { path: string; change: string }[] }

test('an edited file that drops console changes: warned, listed, and one request returns to the console version', async () => {
  const file = path.join(dir, 'config.json');
  const dataDir = path.join(dir, 'data');
  await writeFile(file, JSON.stringify(fileConfig()));
  const first = await run(file, dataDir);
  // The console: a bus, a device on it, Home Assistant and an MQTT user.
  assert.ok((await call(first.port, '/api/v1/config/bus?id=sim2', json('PUT', { driver: 'simulator' }))).body.success);
  assert.ok((await call(first.port, '/api/v1/config/device?id=d2', json('PUT', { model: 'm', bus: 'sim2' }))).body.success);
  const current = (await call<Record<string, Record<string, unknown>>>(first.port, '/api/v1/config')).body.data;
  current['mqtt'] = { ...current['mqtt'], homeassistant: { enable: true }, users: [{ username: 'ha', password_hash: await hashPassword('ha-secret-1') }] };
  const applied = await call(first.port, '/api/v1/config', json('PUT', current));
  assert.ok(applied.body.success, applied.body.errorMsg);
  assert.is((await call(first.port, '/api/v1/config/file-drift')).body.data, null, 'no drift while the file is unchanged');
  await first.stop();

  // Someone edits the file (adds d3, in the old shape): the console's additions are not in it.
  await writeFile(file, JSON.stringify(fileConfig([{ id: 'd3', model: 'm', bus: 'sim' }]), null, 2));
  const second = await run(file, dataDir);
  const expected = [
    { path: 'buses[sim2]', change: 'dropped' }, { path: 'devices[d2]', change: 'dropped' },
    { path: 'mqtt.homeassistant', change: 'dropped' }, { path: 'mqtt.users[ha]', change: 'dropped' },
  ];
  const drift = (await call<Drift>(second.port, '/api/v1/config/file-drift')).body.data;
  assert.equal(drift.entries, expected);
  const warn = second.out().split('\n').find((l) => l.includes('the configuration file undoes what the console applied'));
  assert.ok(warn, 'a warning in the log');
  assert.match(warn!, /"level":40/);
  for (const e of expected) assert.ok(warn!.includes(`${e.path} dropped`), e.path);
  const health = (await call<{ checks: { config_file: { console_version: number; undone: number } } }>(second.port, '/api/v1/health/shadow')).body.data;
  // The file added d3 of its own: returning to the console's version discards it, and says so first; the file's
  // version stays in the history to roll back to.
  assert.equal(drift.lost, [{ path: 'devices[d3]', change: 'added' }]);
  const versions = (await call<{ version: number; summary: string }[]>(second.port, '/api/v1/config/versions')).body.data;
  assert.ok(versions.some((v) => v.version === drift.fileVersion && /configuration file changed/.test(v.summary)), JSON.stringify(versions));
  assert.equal(health.checks.config_file, { console_version: drift.consoleVersion, undone: 4, file_version: drift.fileVersion, file_edits: 1, details: '/api/v1/config/file-drift' });
  const devices = (await call<{ id: string }[]>(second.port, '/api/v1/devices')).body.data.map((d) => d.id);
  assert.equal(devices, ['d1', 'd3'], 'the file runs');

  const back = await call<{ restartRequired: string[] }>(second.port, '/api/v1/config/file-drift/console', { method: 'POST' });
  assert.ok(back.body.success, back.body.errorMsg);
  assert.equal(back.body.data.restartRequired, ['mqtt']);
  assert.equal((await call<{ id: string }[]>(second.port, '/api/v1/devices')).body.data.map((d) => d.id), ['d1', 'd2']);
  assert.is((await call(second.port, '/api/v1/config/file-drift')).body.data, null);
  await second.stop();

  // The next start keeps the console's version (derived from the file as it is now), without a warning.
  const third = await run(file, dataDir);
  assert.equal((await call<{ id: string }[]>(third.port, '/api/v1/devices')).body.data.map((d) => d.id), ['d1', 'd2']);
  assert.not.match(third.out(), /undoes what the console applied/);
  await third.stop();
});

test('a file edit that agrees with the console, or only changes what the console never touched, warns of nothing', async () => {
  const file = path.join(dir, 'calm.json');
  const dataDir = path.join(dir, 'calm-data');
  await writeFile(file, JSON.stringify(fileConfig()));
  const first = await run(file, dataDir);
  assert.ok((await call(first.port, '/api/v1/config/device?id=d2', json('PUT', { model: 'm', bus: 'sim' }))).body.success);
  await first.stop();
  // The file now carries d2 too (keys in another order) and a poll of its own for d1.
  const edited = fileConfig([{ bus: 'sim', model: 'm', id: 'd2' }]);
  (edited['devices'] as Record<string, unknown>[])[0]!['poll'] = '2s';
  await writeFile(file, JSON.stringify(edited));
  const second = await run(file, dataDir);
  assert.is((await call(second.port, '/api/v1/config/file-drift')).body.data, null);
  const refused = await call(second.port, '/api/v1/config/file-drift/console', { method: 'POST' });
  assert.is(refused.body.success, false);
  assert.match(refused.body.errorMsg, /has not undone a console change/);
  assert.not.match(second.out(), /undoes what the console applied/);
  await second.stop();
});

test.run();
