/**
 * The upstream bridge against a real Mosquitto broker on loopback (a child process, killed by PID):
 * forwarding under the prefix, `set` from upstream, the disk queue across a broker stop/restart, and
 * queue_max. Skipped when /usr/sbin/mosquitto is missing (`make system-deps` installs it).
 */
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import mqtt, { type MqttClient } from 'mqtt';
import { Bridge } from '../../src/export/bridge.js';
import { DiskQueue } from '../../src/export/disk-queue.js';
import { startExport } from '../../src/runtime/export.js';
import { Topics } from '../../src/export/topics.js';
import { silentLogger } from '../../src/util/logger.js';
import { needs } from '../helpers/peers.js';
import { collect, connectClient, endClient, makeFixture, removeDir, tempDir, waitFor, withTimeout } from './helpers.js';
import { Mosquitto, freePort, hasMosquitto } from './mosquitto.js';

test('disk queue: FIFO across segments and a reload, bound drops the oldest and counts them', async () => {
  const dir = tempDir('dq');
  try {
    const q = new DiskQueue(dir, 4096, 10);
    for (let i = 0; i < 300; i++) q.push({ t: 't', p: `m${i}`, r: false });
    await q.close();
    assert.ok(q.bytes <= 4096, `bytes ${q.bytes}`);
    assert.ok(q.dropped > 0);
    assert.is(q.dropped + q.length, 300);
    const q2 = new DiskQueue(dir, 4096, 10);
    await q2.load();
    assert.is(q2.length, q.length, 'survives a restart');
    const out: string[] = [];
    for (let seg = await q2.take(); seg; seg = await q2.take()) {
      out.push(...seg.messages.map((m) => m.p));
      seg.ack();
    }
    await q2.close();
    assert.is(out.at(-1), "m299");
    const nums = out.map((p) => Number(p.slice(1)));
    nums.forEach((n, i) => i > 0 && assert.is(n, nums[i - 1]! + 1));
    assert.is(nums[0], q.dropped);
  } finally {
    removeDir(dir);
  }
});

/**
 * A subscriber with a persistent session (clean: false, QoS 1) on a persisting Mosquitto: what is published
 * while it is away (broker restart) is queued for it by the broker, so who reconnects first does not matter.
 */
async function persistentSubscriber(port: number, filter: string): Promise<{ client: MqttClient; got: { topic: string; payload: string }[] }> {
  const client = mqtt.connect(`mqtt://127.0.0.1:${port}`, {
    protocolVersion: 4, reconnectPeriod: 50, connectTimeout: 2000, clean: false, clientId: `sg-test-sub-${process.pid}`,
  });
  client.on('error', () => {}); // ECONNREFUSED while the broker is down: reconnect handles it
  const got: { topic: string; payload: string }[] = [];
  client.on('message', (topic, payload) => got.push({ topic, payload: payload.toString() }));
  await withTimeout(new Promise<void>((r) => client.once('connect', () => r())), 3000, 'subscriber connect');
  await withTimeout(client.subscribeAsync(filter, { qos: 1 }), 3000, `subscribe ${filter}`);
  return { client, got };
}

const bridgeStats = (gw: { stats(): Record<string, unknown> }) =>
  gw.stats().bridge as { connected: boolean; queueMessages: number; dropped: number; connects: number };

const bridgeTest = needs(hasMosquitto ? null : '/usr/sbin/mosquitto is missing (apt-get install mosquitto)', 'bridge tests');

bridgeTest('bridge → Mosquitto: state and events arrive under the prefix; set from upstream comes down', async () => {
  const dir = tempDir('mq');
  const up = new Mosquitto(await freePort(), dir);
  await up.start();
  const f = makeFixture({ mqtt: { bridge: { url: `mqtt://127.0.0.1:${up.port}`, topic_prefix: 'site-a', queue_max: 1 << 20 } } });
  let gw: Awaited<ReturnType<typeof startExport>> | undefined;
  let sub: MqttClient | undefined;
  let local: MqttClient | undefined;
  try {
    gw = await startExport(f.ctx);
    sub = await connectClient(`mqtt://127.0.0.1:${up.port}`);
    const got = await collect(sub, 'site-a/#');
    await waitFor(() => got.some((m) => m.topic === 'site-a/sg/bridge/state' && m.payload === 'online'), 3000, 'bridge online upstream');
    f.shadow.SetDevicePoints('dev1', { temp: 30 });
    await waitFor(() => got.some((m) => m.topic === 'site-a/sg/event/data'), 3000, 'event upstream');
    assert.is(JSON.parse(got.filter((m) => m.topic === 'site-a/sg/dev1').at(-1)!.payload).temp, 30);
    assert.ok(!got.some((m) => !m.topic.startsWith('site-a/')), 'everything under the prefix');
    await sub.publishAsync('site-a/sg/dev1/set', '{"relay1":1}', { qos: 1 });
    await waitFor(() => got.some((m) => m.topic === 'site-a/sg/dev1/set/result'), 3000, 'set result upstream');
    assert.equal(f.io.writes, [{ id: 'dev1', values: [{ name: 'relay1', value: 1 }] }]);
    assert.is(JSON.parse(got.find((m) => m.topic === 'site-a/sg/dev1/set/result')!.payload).success, true);
    // A write the validation refuses comes back as a failed result, and writes nothing.
    await sub.publishAsync('site-a/sg/dev1/set', '{"temp":1}', { qos: 1 });
    await waitFor(() => got.filter((m) => m.topic === 'site-a/sg/dev1/set/result').length === 2, 3000, 'second set result');
    const refused = JSON.parse(got.filter((m) => m.topic === 'site-a/sg/dev1/set/result')[1]!.payload);
    assert.equal([refused.success, refused.errorMsg], [false, 'point is readonly, can not write']);
    assert.is(f.io.writes.length, 1);
    // Retained upstream: a late subscriber gets state and availability at once.
    local = await connectClient(`mqtt://127.0.0.1:${up.port}`);
    const late = await collect(local, 'site-a/sg/dev1/availability');
    await waitFor(() => late.length === 1, 3000, 'retained availability upstream');
    assert.equal([late[0]!.payload, late[0]!.retain], ['online', true]);
    // The local broker says whether the link is up.
    const lc = await connectClient(`mqtt://127.0.0.1:${gw.mqttPort}`);
    const lg = await collect(lc, 'sg/bridge/state');
    await waitFor(() => lg.length === 1, 3000, 'local bridge state');
    assert.is(lg[0]!.payload, 'online');
    await endClient(lc);
  } finally {
    await endClient(sub);
    await endClient(local);
    await gw?.stop();
    await up.stop();
    removeDir(f.dir);
    removeDir(dir);
  }
});

bridgeTest('bridge → Mosquitto stopped and restarted on its port: queued messages arrive in order, none lost', async () => {
  const dir = tempDir('mq');
  const up = new Mosquitto(await freePort(), dir, { persist: true });
  await up.start();
  const f = makeFixture({ mqtt: { bridge: { url: `mqtt://127.0.0.1:${up.port}`, topic_prefix: 'site-a', queue_max: 1 << 20 } } });
  let gw: Awaited<ReturnType<typeof startExport>> | undefined;
  let sub: Awaited<ReturnType<typeof persistentSubscriber>> | undefined;
  try {
    gw = await startExport(f.ctx);
    const g = gw;
    sub = await persistentSubscriber(up.port, 'site-a/sg/#');
    const s = sub;
    await waitFor(() => bridgeStats(g).connected, 3000, 'bridge connected');
    // Some changes while the link is up, then the broker goes away, then more changes.
    for (let i = 0; i < 50; i++) f.shadow.SetDevicePoints('dev1', { energy: 1000 + i });
    await waitFor(() => s.got.filter((m) => m.topic === 'site-a/sg/event/data').length === 50, 3000, '50 live events');
    await up.stop();
    await waitFor(() => !bridgeStats(g).connected, 3000, 'bridge sees the upstream gone');
    for (let i = 50; i < 250; i++) f.shadow.SetDevicePoints('dev1', { energy: 1000 + i });
    await new Promise((r) => setImmediate(r)); // the exporter publishes at the end of the task
    // One event per change, and the device state (built once for the changes of one task).
    assert.ok(bridgeStats(g).queueMessages >= 201, `events + state queued (${bridgeStats(g).queueMessages})`);
    await up.start();
    await waitFor(() => s.got.filter((m) => m.topic === 'site-a/sg/event/data').length >= 250, 8000,
      `250 events (got ${s.got.filter((m) => m.topic === 'site-a/sg/event/data').length})`);
    await new Promise((r) => setTimeout(r, 200)); // duplicates, if any, would show up now
    const vals = s.got.filter((m) => m.topic === 'site-a/sg/event/data').map((m) => JSON.parse(m.payload).values[0].value);
    assert.equal(vals, Array.from({ length: 250 }, (_, i) => 1000 + i), 'in order, none lost, none twice');
    const states = s.got.filter((m) => m.topic === 'site-a/sg/dev1').map((m) => JSON.parse(m.payload).energy as number);
    assert.is(states.at(-1), 1249, 'last state upstream is the last change');
    assert.ok(states.every((v, i) => i === 0 || v >= states[i - 1]!), 'states in order');
    const st = bridgeStats(g);
    assert.is(st.dropped, 0);
    assert.is(st.queueMessages, 0, 'queue drained');
    assert.ok(st.connects >= 2, 'reconnected');
  } finally {
    await endClient(sub?.client);
    await gw?.stop();
    await up.stop();
    removeDir(f.dir);
    removeDir(dir);
  }
});

bridgeTest('bridge → Mosquitto: queue_max drops the oldest while it is away, counts them, flushes the rest in order', async () => {
  const dir = tempDir('bq');
  const up = new Mosquitto(await freePort(), dir, { persist: true });
  const bridge = new Bridge({
    config: { url: `mqtt://127.0.0.1:${up.port}`, topic_prefix: 'p', queue_max: 8192 },
    topics: new Topics('sg'), queueDir: join(dir, 'q'), log: silentLogger,
    publishLocal: () => {}, onSet: () => {}, reconnectPeriod: 100,
  });
  let sub: Awaited<ReturnType<typeof persistentSubscriber>> | undefined;
  try {
    // The subscriber's session is set up first; then the broker goes away before the bridge starts.
    await up.start();
    sub = await persistentSubscriber(up.port, 'p/sg/event/data');
    await up.stop();
    await bridge.start(); // nothing listens on the port now
    for (let i = 0; i < 500; i++) bridge.forward('sg/event/data', JSON.stringify({ i }), false);
    const st = bridge.stats() as { dropped: number; queueBytes: number; queueMessages: number };
    assert.ok(st.dropped > 0, 'oldest dropped');
    assert.ok(st.queueBytes <= 8192, `bounded: ${st.queueBytes}`);
    assert.is(st.dropped + st.queueMessages, 500, 'every message either queued or counted as dropped');
    await up.start();
    const s = sub;
    await waitFor(() => s.got.length === st.queueMessages, 15_000, `queued ones flushed (${s.got.length}/${st.queueMessages})`);
    const seq = s.got.map((m) => JSON.parse(m.payload).i as number);
    assert.is(seq[0], st.dropped);
    assert.is(seq.at(-1), 499);
    seq.forEach((n, i) => i > 0 && assert.is(n, seq[i - 1]! + 1));
  } finally {
    await endClient(sub?.client);
    await bridge.stop();
    await up.stop();
    removeDir(dir);
  }
});

test.run();
