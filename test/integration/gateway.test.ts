/**
 * The gateway as a user runs it, in-process: config → simulator devices → shadow → REST over real HTTP,
 * writes with read-back, offline detection, and a restart that restores the persisted shadow.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import type { SimulatorDriver } from '../../src/drivers/simulator.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { call, waitFor } from '../helpers/http.js';

interface RestPoint { name: string; value: unknown; write_value: unknown; write_time: string }
interface RestDevice { id: string; online: boolean; state: string; points: RestPoint[]; disconnect_times: number }

function config(dataDir: string, devices: unknown[]) {
  return validateConfig({
    gateway: { id: 'test', data_dir: dataDir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 },
    mqtt: { enable: false },
    history: { enable: false },
    shadow: { check_interval: '50ms', persist_interval: '50ms', default_ttl: '1m' },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: {
      thermo: { points: [
        { name: 'temp', type: 'float', unit: '°C', decimals: 2, sim: { fn: 'sine', min: 18, max: 26, period: '60s' } },
        { name: 'setpoint', type: 'float', access: 'RW', sim: { fn: 'constant', value: 21.5 } },
        { name: 'count', type: 'int', sim: { fn: 'counter', step: 1 } },
        { name: 'status', type: 'string', sim: { fn: 'constant', value: 'ok' } },
      ] },
    },
    devices,
  }, { env: {} });
}

const point = (d: RestDevice, name: string): RestPoint => d.points.find((p) => p.name === name)!;

let dir = '';
let gw: Gateway | undefined;

test.before.each(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-gw-'));
});
test.after.each(async () => {
  await gw?.stop();
  gw = undefined;
  await rm(dir, { recursive: true, force: true });
});

test('demo-like devices show live data over REST; a write is read back into the shadow', async () => {
  gw = await startGateway(config(dir, [{ id: 't1', model: 'thermo', bus: 'sim', poll: '20ms' }]), { log: silentLogger });
  const port = gw.httpPort;
  const device = await waitFor(async () => {
    const { body } = await call<RestDevice>(port, '/api/v1/shadow/device?id=t1');
    return body.success && body.data.online && body.data;
  }, 5000, 't1 online');
  assert.is(point(device, 'status').value, 'ok');
  assert.is(typeof point(device, 'temp').value, 'number');

  const write = await call(port, '/api/v1/device/writePoint?id=t1&point=setpoint&value=19.5');
  assert.equal(write.body, { success: true, errorCode: 200, errorMsg: '', data: null });
  const after = (await call<RestDevice>(port, '/api/v1/shadow/device?id=t1')).body.data;
  assert.is(point(after, 'setpoint').value, 19.5, 'read back at once (rule 9), not on the next poll');
  assert.is(point(after, 'setpoint').write_value, 19.5);
  assert.is.not(point(after, 'setpoint').write_time, '0001-01-01 00:00:00');

  const read = await call(port, '/api/v1/device/readPoint?id=t1&point=setpoint');
  assert.is(read.body.data, 19.5);
  const ro = await call(port, '/api/v1/device/writePoint?id=t1&point=temp&value=1');
  assert.is(ro.body.errorMsg, 'point is readonly, can not write');
  const bad = await call(port, '/api/v1/device/writePoints', {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: 't1', values: [{ name: 'setpoint', value: 18 }, { name: 'setpoint2', value: 1 }] }),
  });
  assert.is(bad.body.errorMsg, 'unknown point: setpoint2');
  assert.is((await call(port, '/api/v1/device/readPoint?id=t1&point=setpoint')).body.data, 19.5, 'the refused batch wrote nothing');
});

test('a device that stops answering goes offline after 3 failed polls; health says degraded', async () => {
  gw = await startGateway(config(dir, [
    { id: 'ok', model: 'thermo', bus: 'sim', poll: '20ms' },
    { id: 'dead', model: 'thermo', bus: 'sim', poll: '20ms' },
    { id: 'mute', model: 'thermo', bus: 'sim', poll: '20ms', sim_fault: { silent: true } },
  ]), { log: silentLogger });
  const port = gw.httpPort;
  await waitFor(async () => (await call<RestDevice>(port, '/api/v1/shadow/device?id=dead')).body.data.online, 5000, 'online');
  (gw.drivers.get('sim') as SimulatorDriver).inject('dead', { silent: true });
  const dead = await waitFor(async () => {
    const d = (await call<RestDevice>(port, '/api/v1/shadow/device?id=dead')).body.data;
    return !d.online && d;
  }, 5000, 'dead offline');
  assert.is(dead.disconnect_times, 3, 'offline at the third failure (rule 4)');
  assert.is(dead.state, 'Offline');
  const mute = (await call<RestDevice>(port, '/api/v1/shadow/device?id=mute')).body.data;
  assert.equal([mute.online, mute.disconnect_times], [false, 0], 'never answered: still offline, nothing counted');
  const health = (await call<{ status: string }>(port, '/api/v1/health/shadow')).body.data;
  assert.is(health.status, 'degraded');
  const stats = (await call<{ totalDevices: number; onlineDevices: number }>(port, '/api/v1/shadow/stats')).body.data;
  assert.is(stats.totalDevices, 3);
  assert.is(stats.onlineDevices, 1);
  assert.is((await call(port, '/api/v1/device/readPoint?id=dead&point=temp')).body.errorMsg, 'simulated device dead did not answer');
});

test('restart restores the shadow: values, write values, counters continue; a removed device is dropped', async () => {
  const devices = [{ id: 't1', model: 'thermo', bus: 'sim', poll: '20ms' }, { id: 'gone', model: 'thermo', bus: 'sim', poll: '20ms' }];
  gw = await startGateway(config(dir, devices), { log: silentLogger });
  let port = gw.httpPort;
  await waitFor(async () => (await call<RestDevice>(port, '/api/v1/shadow/device?id=t1')).body.data.online, 5000, 'online');
  await call(port, '/api/v1/device/writePoint?id=t1&point=setpoint&value=17.25');
  const before = (await call<RestDevice>(port, '/api/v1/shadow/device?id=t1')).body.data;
  await gw.stop(); // final save on stop
  gw = await startGateway(config(dir, devices.slice(0, 1)), { log: silentLogger });
  port = gw.httpPort;
  const after = (await call<RestDevice>(port, '/api/v1/shadow/device?id=t1')).body.data;
  assert.is(point(after, 'setpoint').value, 17.25, 'the simulated device still holds the written value');
  assert.is(point(after, 'setpoint').write_value, 17.25);
  assert.is(point(after, 'setpoint').write_time, point(before, 'setpoint').write_time);
  assert.ok((point(after, 'count').value as number) >= (point(before, 'count').value as number), 'counter resumed, not reset');
  assert.is((await call(port, '/api/v1/shadow/device?id=gone')).body.errorMsg, 'unknown device');
});

test('/metrics serves Prometheus text: shadow, persistence and per-bus driver figures', async () => {
  gw = await startGateway(config(dir, [{ id: 't1', model: 'thermo', bus: 'sim', poll: '20ms' }]), { log: silentLogger });
  const port = gw.httpPort;
  await waitFor(async () => (await call<RestDevice>(port, '/api/v1/shadow/device?id=t1')).body.data.online, 5000, 'online');
  await gw.flush();
  const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5000) });
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  const text = await res.text();
  const sample = (name: string): number => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
    assert.ok(line, `${name} missing in:\n${text}`);
    return Number(line.split(' ').at(-1));
  };
  assert.is(sample('shadowgate_devices_online'), 1);
  assert.is(sample('shadowgate_points'), 4);
  assert.match(text, /^shadowgate_devices\{state="Online"\} 1$/m);
  assert.ok(sample('shadowgate_persist_saves_total') >= 1);
  assert.is(sample('shadowgate_persist_ok'), 1);
  assert.match(text, /^shadowgate_bus_reads_total\{bus="sim"\} \d+$/m);
  assert.ok(sample('shadowgate_bus_reads_total') > 0);
  for (const line of text.trim().split('\n')) {
    if (line === '') continue;
    assert.match(line, /^(# (TYPE [a-z_:][a-z0-9_:]* (gauge|counter)|HELP [a-z_:][a-z0-9_:]* .+)|[a-z_:][a-z0-9_:]*(\{[^}]*\})? -?[0-9.e+]+)$/, `not Prometheus text: ${line}`);
  }
});

test.run();
