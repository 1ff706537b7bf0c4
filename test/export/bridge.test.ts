import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Aedes } from 'aedes';
import { Bridge } from '../../src/export/bridge.js';
import { DiskQueue } from '../../src/export/disk-queue.js';
import { startExport } from '../../src/export/index.js';
import { Topics } from '../../src/export/topics.js';
import { silentLogger } from '../../src/util/logger.js';
import { collect, connectClient, endClient, makeFixture, removeDir, tempDir, waitFor } from './helpers.js';

/** A second Aedes broker standing in for the upstream cluster; can be stopped and restarted on its port. */
class Upstream {
  private broker: Aedes | null = null;
  private server: net.Server | null = null;
  port = 0;
  async start(): Promise<void> {
    this.broker = await Aedes.createBroker();
    const b = this.broker;
    this.server = net.createServer((s) => b.handle(s));
    await new Promise<void>((r) => this.server!.listen(this.port, '127.0.0.1', r));
    this.port = (this.server.address() as AddressInfo).port;
  }
  async stop(): Promise<void> {
    const b = this.broker;
    const s = this.server;
    this.broker = null;
    this.server = null;
    if (b) await new Promise<void>((r) => b.close(() => r()));
    if (s) await new Promise<void>((r) => s.close(() => r()));
  }
}

test('disk queue: FIFO across segments and a reload, bound drops the oldest and counts them', () => {
  const dir = tempDir('dq');
  try {
    const q = new DiskQueue(dir, 4096, 10);
    for (let i = 0; i < 300; i++) q.push({ t: 't', p: `m${i}`, r: false });
    q.close();
    assert.ok(q.bytes <= 4096, `bytes ${q.bytes}`);
    assert.ok(q.dropped > 0);
    assert.is(q.dropped + q.length, 300);
    const q2 = new DiskQueue(dir, 4096, 10);
    q2.load();
    assert.is(q2.length, q.length, 'survives a restart');
    const out: string[] = [];
    for (let seg = q2.take(); seg; seg = q2.take()) {
      out.push(...seg.messages.map((m) => m.p));
      seg.ack();
    }
    assert.is(out.at(-1), "m299");
    const nums = out.map((p) => Number(p.slice(1)));
    nums.forEach((n, i) => i > 0 && assert.is(n, nums[i - 1]! + 1));
    assert.is(nums[0], q.dropped);
  } finally {
    removeDir(dir);
  }
});

test('bridge: state and events arrive upstream under the prefix; set from upstream comes down', async () => {
  const up = new Upstream();
  await up.start();
  const f = makeFixture({ mqtt: { bridge: { url: `mqtt://127.0.0.1:${up.port}`, topic_prefix: 'site-a', queue_max: 1 << 20 } } });
  const gw = await startExport(f.ctx);
  const sub = await connectClient(`mqtt://127.0.0.1:${up.port}`);
  try {
    const got = await collect(sub, 'site-a/#');
    await waitFor(() => got.some((m) => m.topic === 'site-a/sg/bridge/state' && m.payload === 'online'), 3000, 'bridge online upstream');
    f.shadow.SetDevicePoints('dev1', { temp: 30 });
    await waitFor(() => got.some((m) => m.topic === 'site-a/sg/event/data'), 3000, 'event upstream');
    assert.is(JSON.parse(got.filter((m) => m.topic === 'site-a/sg/dev1').at(-1)!.payload).temp, 30);
    await sub.publishAsync('site-a/sg/dev1/set', '{"relay1":1}', { qos: 1 });
    await waitFor(() => got.some((m) => m.topic === 'site-a/sg/dev1/set/result'), 3000, 'set result upstream');
    assert.equal(f.io.writes, [{ id: 'dev1', values: [{ name: 'relay1', value: 1 }] }]);
    assert.is(JSON.parse(got.find((m) => m.topic === 'site-a/sg/dev1/set/result')!.payload).success, true);
    // The local broker says whether the link is up.
    const local = await connectClient(`mqtt://127.0.0.1:${gw.mqttPort}`);
    const lg = await collect(local, 'sg/bridge/state');
    await waitFor(() => lg.length === 1, 3000, 'local bridge state');
    assert.is(lg[0]!.payload, 'online');
    await endClient(local);
  } finally {
    await endClient(sub);
    await gw.stop();
    await up.stop();
    removeDir(f.dir);
  }
});

test('bridge: upstream stopped and restarted → queued messages arrive in order, none lost', async () => {
  const up = new Upstream();
  await up.start();
  const f = makeFixture({ mqtt: { bridge: { url: `mqtt://127.0.0.1:${up.port}`, topic_prefix: 'site-a', queue_max: 1 << 20 } } });
  const gw = await startExport(f.ctx);
  let sub: Awaited<ReturnType<typeof connectClient>> | undefined;
  try {
    await waitFor(() => (gw.stats().bridge as { connected: boolean }).connected, 3000, 'bridge connected');
    await up.stop();
    await waitFor(() => !(gw.stats().bridge as { connected: boolean }).connected, 3000, 'bridge sees the upstream gone');
    for (let i = 0; i < 200; i++) f.shadow.SetDevicePoints('dev1', { energy: 1000 + i });
    assert.ok((gw.stats().bridge as { queueMessages: number }).queueMessages >= 400, 'state + event per change queued');
    await up.start();
    sub = await connectClient(`mqtt://127.0.0.1:${up.port}`);
    const got = await collect(sub, 'site-a/sg/event/data');
    await waitFor(() => got.length === 200, 8000, `200 queued events (got ${got.length})`);
    const vals = got.map((m) => JSON.parse(m.payload).values[0].value);
    assert.equal(vals, Array.from({ length: 200 }, (_, i) => 1000 + i));
    assert.is((gw.stats().bridge as { dropped: number }).dropped, 0);
  } finally {
    await endClient(sub);
    await gw.stop();
    await up.stop();
    removeDir(f.dir);
  }
});

test('bridge: queue_max drops the oldest while the upstream is away, counts them, flushes the rest in order', async () => {
  const up = new Upstream();
  await up.start();
  const port = up.port;
  await up.stop();
  up.port = port;
  const dir = tempDir('bq');
  const bridge = new Bridge({
    config: { url: `mqtt://127.0.0.1:${port}`, topic_prefix: 'p', queue_max: 8192 },
    topics: new Topics('sg'), queueDir: join(dir, 'q'), log: silentLogger,
    publishLocal: () => {}, onSet: () => {}, reconnectPeriod: 100,
  });
  let sub: Awaited<ReturnType<typeof connectClient>> | undefined;
  try {
    await bridge.start();
    for (let i = 0; i < 500; i++) bridge.forward('sg/event/data', JSON.stringify({ i }), false);
    const st = bridge.stats() as { dropped: number; queueBytes: number; queueMessages: number };
    assert.ok(st.dropped > 0, 'oldest dropped');
    assert.ok(st.queueBytes <= 8192, `bounded: ${st.queueBytes}`);
    assert.is(st.dropped + st.queueMessages, 500, 'every message either queued or counted as dropped');
    await up.start();
    sub = await connectClient(`mqtt://127.0.0.1:${port}`);
    const got = await collect(sub, 'p/sg/event/data');
    await waitFor(() => got.length === st.queueMessages, 5000, 'queued ones flushed');
    const seq = got.map((m) => JSON.parse(m.payload).i);
    assert.is(seq[0], st.dropped);
    assert.is(seq.at(-1), 499);
    seq.forEach((n, i) => i > 0 && assert.is(n, seq[i - 1] + 1));
  } finally {
    await endClient(sub);
    await bridge.stop();
    await up.stop();
    removeDir(dir);
  }
});

test.run();
