/**
 * Live reconfiguration on a running gateway over real HTTP: a device and a bus are added, changed and
 * removed through the config API while the other devices keep polling (no missed poll: their counters
 * advance by exactly one per poll, without a long gap) and keep their shadow state (never offline);
 * a refused config changes nothing; a rollback restores the previous version; the applied config is
 * what the next start runs; tokens guard every change.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { readActiveConfig } from '../../src/runtime/config-store.js';
import { silentLogger } from '../../src/util/logger.js';
import { call, waitFor } from '../helpers/http.js';
import { ownMs, stamp, type Stamp } from '../helpers/lateness.js';

const POLL_MS = 50;

function rawConfig(dataDir: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    gateway: { id: 'live', data_dir: dataDir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 },
    mqtt: { enable: false },
    history: { enable: false },
    shadow: { check_interval: '50ms', persist_interval: '100ms', default_ttl: '1m' },
    buses: [{ id: 'sim', driver: 'simulator' }, { id: 'sim2', driver: 'simulator' }],
    models: {
      tick: { points: [
        { name: 'count', type: 'int', sim: { fn: 'counter', step: 1 } },
        { name: 'setpoint', type: 'float', access: 'RW', sim: { fn: 'constant', value: 20 } },
      ] },
      other: { points: [{ name: 'level', type: 'float', sim: { fn: 'constant', value: 7 } }] },
    },
    devices: [
      { id: 'a1', model: 'tick', bus: 'sim', poll: `${POLL_MS}ms` },
      { id: 'a2', model: 'tick', bus: 'sim', poll: `${POLL_MS}ms` },
      { id: 'b1', model: 'tick', bus: 'sim2', poll: `${POLL_MS}ms` },
    ],
    ...extra,
  };
}

let dir = '';
let gw: Gateway | undefined;

test.before.each(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-live-'));
});
test.after.each(async () => {
  await gw?.stop();
  gw = undefined;
  await rm(dir, { recursive: true, force: true });
});

async function start(raw: Record<string, unknown>, fileText = JSON.stringify(raw)): Promise<Gateway> {
  return startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw, fileText });
}

const json = (method: string, body: unknown, token?: string): RequestInit => ({
  method,
  headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  body: JSON.stringify(body),
});

interface Apply { version: number; changes: string[]; restartRequired: string[] }

test('devices and buses are added, changed and removed live; the others never miss a poll nor change state', async () => {
  gw = await start(rawConfig(dir));
  const g = gw;
  const port = g.httpPort;
  const watched = ['a1', 'a2', 'b1'];
  const seen = new Map<string, { count: number; at: Stamp }[]>(watched.map((id) => [id, []]));
  const offline: string[] = [];
  const owner = {};
  g.shadow.bus.on(owner, 'dataChange', (e) => {
    const list = seen.get(e.id);
    const count = e.values.find((v) => v.name === 'count')?.value;
    if (list && typeof count === 'number') list.push({ count, at: stamp() });
  });
  g.shadow.bus.on(owner, 'ShadowOffline', (e) => offline.push(e.id));
  await waitFor(() => watched.every((id) => g.shadow.GetDeviceStatus(id)), 3000, 'watched devices online');
  const versions = new Map(watched.map((id) => [id, g.shadow.GetDeviceVersion(id)]));

  // A device on a running bus.
  let r = await call<Apply>(port, '/api/v1/config/device?id=n1', json('PUT', { model: 'tick', bus: 'sim', poll: '50ms' }));
  assert.ok(r.body.success, r.body.errorMsg);
  assert.equal(r.body.data.changes, ['device n1: added']);
  await waitFor(() => g.shadow.GetDeviceStatus('n1'), 3000, 'n1 polled');
  // Changed: a new poll interval and TTL.
  r = await call<Apply>(port, '/api/v1/config/device?id=n1', json('PUT', { model: 'tick', bus: 'sim', poll: '80ms', ttl: '30s' }));
  assert.ok(r.body.success, r.body.errorMsg);
  assert.equal(r.body.data.changes, ['device n1: updated']);
  assert.is(g.shadow.GetDeviceRecord('n1')!.ttl, 30_000);
  // A new bus with a device of its own, then an edit of that bus (restarts that bus only).
  r = await call<Apply>(port, '/api/v1/config/bus?id=sim3', json('PUT', { driver: 'simulator' }));
  assert.ok(r.body.success, r.body.errorMsg);
  r = await call<Apply>(port, '/api/v1/config/device?id=c1', json('PUT', { model: 'other', bus: 'sim3', poll: '50ms' }));
  assert.ok(r.body.success, r.body.errorMsg);
  await waitFor(() => g.shadow.GetDeviceStatus('c1'), 3000, 'c1 polled on the new bus');
  assert.ok(g.drivers.has('sim3'));
  // Moved to another bus.
  r = await call<Apply>(port, '/api/v1/config/device?id=c1', json('PUT', { model: 'other', bus: 'sim', poll: '50ms' }));
  assert.ok(r.body.success, r.body.errorMsg);
  // Removed: the bus with a device refuses, then device and bus go.
  r = await call<Apply>(port, '/api/v1/config/device?id=n1', { method: 'DELETE' });
  assert.ok(r.body.success, r.body.errorMsg);
  assert.not.ok(g.shadow.HasDevice('n1'));
  r = await call<Apply>(port, '/api/v1/config/bus?id=sim3', { method: 'DELETE' });
  assert.ok(r.body.success, r.body.errorMsg);
  assert.not.ok(g.drivers.has('sim3'));
  r = await call<Apply>(port, '/api/v1/config/bus?id=sim', { method: 'DELETE' });
  assert.not.ok(r.body.success);
  assert.match(r.body.errorMsg, /bus sim still has devices: a1, a2, c1/);
  await new Promise((res) => setTimeout(res, 600));
  g.shadow.bus.off(owner);

  for (const id of watched) {
    const list = seen.get(id)!;
    assert.ok(list.length >= 10, `${id}: ${list.length} polls seen`);
    for (let i = 1; i < list.length; i++) {
      // A counter advances by one per read: any other step is a lost (or doubled) poll.
      assert.is(list[i]!.count - list[i - 1]!.count, 1, `${id}: poll ${i} skipped (counts ${list[i - 1]!.count} → ${list[i]!.count})`);
      // Less the time this machine kept the gateway's thread from a CPU (a load beside the tests: 552 ms seen).
      const gap = ownMs(list[i - 1]!.at, list[i]!.at);
      assert.ok(gap < POLL_MS * 8, `${id}: ${Math.round(gap)} ms between two polls (${Math.round(list[i]!.at.t - list[i - 1]!.at.t)} ms on the wall)`);
    }
    assert.ok(g.shadow.GetDeviceVersion(id) > versions.get(id)!, `${id} kept its shadow and moved on`);
  }
  assert.equal(offline, [], 'no device went offline');
  assert.is(g.shadow.GetDeviceStatus('c1'), true);
});

test('a refused config changes nothing and names every problem at its path; rollback restores a version', async () => {
  gw = await start(rawConfig(dir));
  const port = gw.httpPort;
  const before = (await call(port, '/api/v1/config')).body.data;
  const bad = { ...rawConfig(dir), devices: [{ id: 'x', model: 'nope', bus: 'sim' }, { id: 'y', model: 'tick', bus: 'nobus', poll: 'soon' }] };
  const v = await call<{ valid: boolean; errors: { path: string; message: string }[] }>(port, '/api/v1/config/validate', json('POST', bad));
  assert.is(v.body.data.valid, false);
  assert.ok(v.body.data.errors.length >= 3, JSON.stringify(v.body.data.errors));
  assert.ok(v.body.data.errors.every((e) => e.path.startsWith('devices')), JSON.stringify(v.body.data.errors));
  const r = await call<{ errors: { path: string }[] }>(port, '/api/v1/config', json('PUT', bad));
  assert.is(r.body.success, false);
  assert.ok(r.body.data.errors.length >= 3);
  assert.equal((await call(port, '/api/v1/config')).body.data, before);
  assert.ok(gw.shadow.HasDevice('a1') && !gw.shadow.HasDevice('x'));

  const first = await call<Apply>(port, '/api/v1/config/device?id=n1', json('PUT', { model: 'tick', bus: 'sim' }));
  const second = await call<Apply>(port, '/api/v1/config/device?id=n2', json('PUT', { model: 'tick', bus: 'sim' }));
  assert.is(second.body.data.version, first.body.data.version + 1);
  const list = await call<{ version: number; summary: string }[]>(port, '/api/v1/config/versions');
  assert.equal(list.body.data.slice(0, 2).map((x) => x.summary), ['added device n2', 'added device n1']);
  const back = await call<Apply>(port, '/api/v1/config/rollback', json('POST', { version: first.body.data.version }));
  assert.ok(back.body.success, back.body.errorMsg);
  assert.ok(gw.shadow.HasDevice('n1'));
  assert.not.ok(gw.shadow.HasDevice('n2'));
  const missing = await call(port, '/api/v1/config/rollback', json('POST', { version: 999 }));
  assert.match(missing.body.errorMsg, /no configuration version 999/);
});

test('sections that cannot change live are stored and reported as needing a restart; the next start runs the applied config', async () => {
  const raw = rawConfig(dir);
  const fileText = JSON.stringify(raw);
  gw = await start(raw, fileText);
  const port = gw.httpPort;
  const next = { ...raw, shadow: { ...(raw.shadow as object), default_ttl: '2m' }, devices: [...(raw.devices as unknown[]), { id: 'n1', model: 'other', bus: 'sim2' }] };
  const r = await call<Apply>(port, '/api/v1/config', json('PUT', next));
  assert.ok(r.body.success, r.body.errorMsg);
  assert.equal(r.body.data.restartRequired, ['shadow']);
  assert.ok(r.body.data.changes.includes('device n1: added'));
  await gw.stop();
  gw = undefined;
  // The same file: the applied config wins. An edited file: the file wins.
  assert.equal(await readActiveConfig(dir, fileText), next);
  assert.is(await readActiveConfig(dir, `${fileText} `), undefined);
  assert.ok(JSON.parse(await readFile(path.join(dir, 'config', 'active.json'), 'utf8')).version >= 1);
  gw = await start(next, fileText);
  assert.ok(gw.shadow.HasDevice('n1'));
  const versions = await call<unknown[]>(gw.httpPort, '/api/v1/config/versions');
  assert.ok(versions.body.data.length >= 1, 'versions survive a restart');
});

test('with tokens, every change needs a write token; read tokens only read; the whole config needs the write token', async () => {
  gw = await start(rawConfig(dir, { http: { host: '127.0.0.1', port: 0, auth: { tokens: ['writer-token'], read_tokens: ['reader-token'] } } }));
  const port = gw.httpPort;
  const body = { model: 'tick', bus: 'sim' };
  assert.is((await call(port, '/api/v1/config/device?id=n1', json('PUT', body))).status, 401);
  assert.is((await call(port, '/api/v1/config/device?id=n1', json('PUT', body, 'reader-token'))).status, 401);
  assert.is((await call(port, '/api/v1/config/device?id=a1', { method: 'DELETE', headers: { authorization: 'Bearer reader-token' } })).status, 401);
  assert.is((await call(port, '/api/v1/config', { headers: { authorization: 'Bearer reader-token' } })).status, 401);
  assert.is((await call(port, '/api/v1/config')).status, 401);
  assert.is((await call(port, '/api/v1/device/writePoint?id=a1&point=setpoint&value=3', { headers: { authorization: 'Bearer reader-token' } })).status, 401);
  assert.not.ok(gw.shadow.HasDevice('n1'));
  assert.ok(gw.shadow.HasDevice('a1'));
  const ok = await call<Apply>(port, '/api/v1/config/device?id=n1', json('PUT', body, 'writer-token'));
  assert.ok(ok.body.success, ok.body.errorMsg);
  assert.ok((await call(port, '/api/v1/models', { headers: { authorization: 'Bearer reader-token' } })).body.success);
  const auth = await call<{ tokens: boolean; canWrite: boolean }>(port, '/api/v1/auth', { headers: { authorization: 'Bearer reader-token' } });
  assert.equal(auth.body.data, { tokens: true, canWrite: false });
});

test.run();
