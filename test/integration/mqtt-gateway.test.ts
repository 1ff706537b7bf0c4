/**
 * The gateway as a user runs it, in-process, seen through its MQTT broker by real clients: a simulated
 * device that stops answering publishes the offline event and a retained `offline` availability
 * (subscriber: mosquitto_sub in its own process when installed, else mqtt.js), and a `set` from a
 * can_write user goes through the real write path and comes back as a result and the new retained state.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { MqttClient } from 'mqtt';
import { validateConfig } from '../../src/config/load.js';
import type { SimulatorDriver } from '../../src/drivers/simulator.js';
import { hashPassword } from '../../src/export/auth.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { collect, connectClient, endClient, hasMosquittoClients, waitFor } from '../export/helpers.js';
import { hasPeer } from '../helpers/peers.js';

interface Line { retain: boolean; topic: string; payload: string }

function config(dataDir: string, passwordHash: string) {
  return validateConfig({
    gateway: { id: 'itest', data_dir: dataDir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 },
    mqtt: {
      enable: true, host: '127.0.0.1', port: 0, ws_port: 0, base_topic: 'sgi', allow_anonymous: true,
      users: [{ username: 'op', password_hash: passwordHash, can_write: true }],
    },
    history: { enable: false },
    shadow: { check_interval: '50ms', persist_interval: '1s', default_ttl: '1m' },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: {
      thermo: { points: [
        { name: 'temp', type: 'float', unit: '°C', decimals: 2, sim: { fn: 'sine', min: 18, max: 26, period: '60s' } },
        { name: 'setpoint', type: 'float', access: 'RW', sim: { fn: 'constant', value: 21.5 } },
      ] },
    },
    devices: [
      { id: 't1', model: 'thermo', bus: 'sim', poll: '20ms' },
      { id: 'dead', model: 'thermo', bus: 'sim', poll: '20ms' },
    ],
  }, { env: {} });
}

/** A subscriber in its own process: mosquitto_sub printing `<retain> <topic> <payload>` per message. */
function mosquittoSub(port: number, topics: string[]): { child: ChildProcess; lines: Line[]; stderr: () => string } {
  const args = ['-h', '127.0.0.1', '-p', String(port), '-q', '1', '-F', '%r %t %p', ...topics.flatMap((t) => ['-t', t])];
  const child = spawn('mosquitto_sub', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Line[] = [];
  let rest = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => {
    const parts = (rest + d.toString()).split('\n');
    rest = parts.pop()!;
    for (const p of parts) {
      const [r, topic, ...payload] = p.split(' ');
      lines.push({ retain: r === '1', topic: topic!, payload: payload.join(' ') });
    }
  });
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return { child, lines, stderr: () => err };
}

function killChild(child: ChildProcess | undefined): void {
  if (child?.pid && child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGTERM');
}

let dir = '';
let gw: Gateway | undefined;
const clients: MqttClient[] = [];
let child: ChildProcess | undefined;

test.before.each(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-mqttgw-'));
});
test.after.each(async () => {
  killChild(child);
  child = undefined;
  for (const c of clients.splice(0)) await endClient(c);
  await gw?.stop();
  gw = undefined;
  await rm(dir, { recursive: true, force: true });
});

test('a simulated device that stops answering: offline event and retained offline availability over MQTT', async () => {
  gw = await startGateway(config(dir, await hashPassword('pw', { N: 1024 })), { log: silentLogger });
  const port = gw.mqttPort;
  assert.ok(port > 0, 'broker bound');
  const topics = ['sgi/event/offline', 'sgi/dead/availability'];
  let lines: Line[];
  // mosquitto_sub is the independent subscriber; mqtt.js stands in where it is missing (not where peers are required).
  if (hasPeer(!hasMosquittoClients && 'mosquitto_sub is missing (apt-get install mosquitto-clients)', 'mosquitto_sub subscriber (mqtt.js subscribes instead)')) {
    const sub = mosquittoSub(port, topics);
    child = sub.child;
    lines = sub.lines;
  } else {
    const c = await connectClient(`mqtt://127.0.0.1:${port}`);
    clients.push(c);
    lines = [];
    const a = await collect(c, topics[0]!);
    await c.subscribeAsync(topics[1]!, { qos: 1 });
    lines = a;
  }
  // The retained availability on subscribe proves the subscription is live before the fault.
  await waitFor(() => lines.some((l) => l.topic === 'sgi/dead/availability' && l.payload === 'online'), 5000, 'dead online (retained)');
  assert.not.ok(lines.some((l) => l.topic === 'sgi/event/offline'), 'no offline event while it answers');

  (gw.drivers.get('sim') as SimulatorDriver).inject('dead', { silent: true });
  await waitFor(() => lines.some((l) => l.topic === 'sgi/event/offline'), 5000, 'offline event');
  const ev = JSON.parse(lines.find((l) => l.topic === 'sgi/event/offline')!.payload) as { id: string; time: string; ts: number };
  assert.is(ev.id, 'dead');
  assert.type(ev.time, 'string');
  assert.ok(Math.abs(Date.now() - ev.ts) < 10_000, 'event time is now');
  await waitFor(() => lines.some((l) => l.topic === 'sgi/dead/availability' && l.payload === 'offline'), 5000, 'availability offline');
  assert.ok(!lines.some((l) => l.topic === 'sgi/event/offline' && JSON.parse(l.payload).id === 't1'), 'the healthy device stays online');

  // A client arriving later gets `offline` retained, and the state says online: false.
  const late = await connectClient(`mqtt://127.0.0.1:${port}`);
  clients.push(late);
  const got = await collect(late, 'sgi/dead/#');
  await waitFor(() => got.some((m) => m.topic === 'sgi/dead/availability') && got.some((m) => m.topic === 'sgi/dead'), 3000, 'retained dead topics');
  assert.equal(got.filter((m) => m.topic === 'sgi/dead/availability').map((m) => [m.payload, m.retain]), [['offline', true]]);
  const state = JSON.parse(got.find((m) => m.topic === 'sgi/dead')!.payload) as { online: boolean };
  assert.is(state.online, false);
});

test('set from a can_write user through the real write path: result, then the value read back in the retained state', async () => {
  gw = await startGateway(config(dir, await hashPassword('pw', { N: 1024 })), { log: silentLogger });
  const port = gw.mqttPort;
  const op = await connectClient(`mqtt://127.0.0.1:${port}`, { username: 'op', password: 'pw' });
  clients.push(op);
  const got = await collect(op, 'sgi/t1/#');
  await waitFor(() => got.some((m) => m.topic === 'sgi/t1' && JSON.parse(m.payload).online === true), 5000, 't1 online');
  assert.is(JSON.parse(got.filter((m) => m.topic === 'sgi/t1').at(-1)!.payload).setpoint, 21.5);

  await op.publishAsync('sgi/t1/set', '{"setpoint": 19.5}', { qos: 1 });
  await waitFor(() => got.some((m) => m.topic === 'sgi/t1/set/result'), 5000, 'set result');
  assert.equal(JSON.parse(got.find((m) => m.topic === 'sgi/t1/set/result')!.payload),
    { success: true, errorMsg: '', values: [{ name: 'setpoint', value: 19.5 }] });
  await waitFor(() => got.some((m) => m.topic === 'sgi/t1' && JSON.parse(m.payload).setpoint === 19.5), 3000, 'state with 19.5');

  // The retained state a newcomer gets holds the written value, and later polls keep it.
  await new Promise((r) => setTimeout(r, 100));
  const late = await connectClient(`mqtt://127.0.0.1:${port}`);
  clients.push(late);
  const lg = await collect(late, 'sgi/t1');
  await waitFor(() => lg.length > 0, 3000, 'retained state');
  assert.ok(lg[0]!.retain);
  assert.is(JSON.parse(lg[0]!.payload).setpoint, 19.5);

  // A refused write (read-only point) gets a failed result and changes nothing.
  await op.publishAsync('sgi/t1/set', '{"temp": 1}', { qos: 1 });
  await waitFor(() => got.filter((m) => m.topic === 'sgi/t1/set/result').length === 2, 5000, 'second result');
  const refused = JSON.parse(got.filter((m) => m.topic === 'sgi/t1/set/result')[1]!.payload) as { success: boolean; errorMsg: string };
  assert.equal([refused.success, refused.errorMsg], [false, 'point is readonly, can not write']);
});

test.run();
