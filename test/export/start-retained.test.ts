/**
 * Every device's retained state is published after the gateway serves (in slices), not before: a real client
 * that connects while that is under way is held until all of it is retained, so its subscription still finds
 * every device's state and availability, as it did when they were published before "ready".
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { systemClock } from '../../src/core/clock.js';
import { EventBus, type ShadowEvents } from '../../src/core/events.js';
import { Shadow } from '../../src/core/shadow.js';
import type { ExportContext } from '../../src/export/context.js';
import { createExportPart, type ExportPart } from '../../src/runtime/export.js';
import { silentLogger } from '../../src/util/logger.js';
import { collect, connectClient, defaultMqtt, endClient, FakeIO, noExport, removeDir, tempDir, waitFor } from './helpers.js';

// Several of the exporter's slices (50 devices each), so a connection can arrive in between.
const DEVICES = 300;

function fleet(dir: string): { ctx: ExportContext; shadow: Shadow } {
  const bus = new EventBus<ShadowEvents>((err) => console.error('listener error', err));
  const shadow = new Shadow({ maxDevices: DEVICES, maxPoints: DEVICES * 3, defaultTtl: 60_000, bus });
  for (let i = 0; i < DEVICES; i++) {
    shadow.AddDevice(`d${i}`, 'm', 60_000, { points: [{ name: 'a' }, { name: 'b' }, { name: 'c' }] });
    // Every third device never reported: offline, no values.
    if (i % 3) shadow.SetDevicePoints(`d${i}`, { a: i, b: i * 2, c: i * 3 });
  }
  const ctx: ExportContext = {
    shadow, bus, io: new FakeIO(shadow, () => []),
    shadowJson: () => [], devicePoints: () => [],
    mqtt: defaultMqtt(), export: { shadow: noExport }, gatewayId: 'gw1', dataDir: dir, clock: systemClock, log: silentLogger,
  };
  return { ctx, shadow };
}

test('a client connecting before the states are out is held, then finds every device retained', async () => {
  const dir = tempDir('start-retained');
  const { ctx, shadow } = fleet(dir);
  const part: ExportPart = createExportPart(ctx);
  let client: Awaited<ReturnType<typeof connectClient>> | undefined;
  try {
    await part.start();
    let connected = false;
    const connecting = connectClient(`mqtt://127.0.0.1:${part.mqttPort}`).then((c) => {
      connected = true;
      return c;
    });
    // The broker accepts the TCP connection meanwhile; the CONNECT is not answered before ready().
    await new Promise((r) => setTimeout(r, 100));
    assert.not.ok(connected, 'no CONNACK before the states are published');
    part.ready();
    client = await connecting;
    // (collect's listener sees every message of the client: one subscription, split by topic.)
    const got = await collect(client, 'sg/#');
    const isState = (t: string): boolean => /^sg\/d\d+$/.test(t);
    const isAvail = (t: string): boolean => /^sg\/d\d+\/availability$/.test(t);
    const count = (is: (t: string) => boolean): number => got.filter((m) => is(m.topic)).length;
    await waitFor(() => count(isState) >= DEVICES && count(isAvail) >= DEVICES, 5000, 'every device state and availability');
    const states = got.filter((m) => isState(m.topic));
    const avail = got.filter((m) => isAvail(m.topic));
    assert.is(states.filter((m) => m.retain).length, DEVICES, 'every state delivered as retained');
    assert.is(avail.filter((m) => m.retain).length, DEVICES, 'every availability delivered as retained');
    for (let i = 0; i < DEVICES; i += 7) {
      const state = JSON.parse(states.find((m) => m.topic === `sg/d${i}`)!.payload) as Record<string, unknown>;
      const dev = shadow.GetDeviceRecord(`d${i}`)!;
      assert.equal([state.a, state.online], [dev.points.find((p) => p.name === 'a')!.value, dev.online], `d${i}`);
      assert.is(avail.find((m) => m.topic === `sg/d${i}/availability`)!.payload, dev.online ? 'online' : 'offline');
    }
  } finally {
    await endClient(client);
    await part.stop();
    removeDir(dir);
  }
});

test('a change before ready is not published on its own: the state that follows ready is the newer one', async () => {
  const dir = tempDir('start-retained-change');
  const { ctx, shadow } = fleet(dir);
  const part = createExportPart(ctx);
  let client: Awaited<ReturnType<typeof connectClient>> | undefined;
  try {
    await part.start();
    shadow.SetDevicePoints('d1', { a: 1001 });
    shadow.SetDevicePoints('d2', { a: 1002 });
    await new Promise((r) => setImmediate(r));
    const states = (): unknown => (part.stats()['exporter'] as { states: number }).states;
    assert.is(states(), 0, 'no state built before ready');
    part.ready();
    client = await connectClient(`mqtt://127.0.0.1:${part.mqttPort}`);
    const got = await collect(client, 'sg/#');
    await waitFor(() => got.filter((m) => /^sg\/d\d+$/.test(m.topic)).length >= DEVICES, 5000, 'every device state');
    assert.is(states(), DEVICES, 'one state a device');
    for (const [id, a] of [['d1', 1001], ['d2', 1002]] as const) {
      assert.is((JSON.parse(got.find((m) => m.topic === `sg/${id}`)!.payload) as { a: number }).a, a, id);
    }
    // After its slice, a device's change is published at once, as always.
    shadow.SetDevicePoints('d1', { a: 2001 });
    await waitFor(() => got.some((m) => m.topic === 'sg/d1' && (JSON.parse(m.payload) as { a: number }).a === 2001), 5000, 'the change after ready');
  } finally {
    await endClient(client);
    await part.stop();
    removeDir(dir);
  }
});

test('a connection held when the gateway stops is closed, not left open', async () => {
  const dir = tempDir('start-retained-stop');
  const { ctx } = fleet(dir);
  const part = createExportPart(ctx);
  await part.start();
  try {
    const connecting = connectClient(`mqtt://127.0.0.1:${part.mqttPort}`);
    await new Promise((r) => setTimeout(r, 50));
    await part.stop();
    await connecting.then((c) => {
      void endClient(c);
      assert.unreachable('connected to a stopped broker');
    }, (err: Error) => assert.ok(err instanceof Error));
  } finally {
    removeDir(dir);
  }
});

test.run();
