/**
 * The Modbus TCP server for devices without Modbus registers (here simulator devices; GPIO works the same):
 * a map generated from the model, served from the shadow; and the server's connection rules (32 clients
 * at once, the allow list). Real gateway, real TCP clients written from the spec.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { GeneratedUnit, UnitException, generateMap } from '../../src/runtime/door/generated-unit.js';
import type { WriteRequest } from '../../src/core/io.js';
import { silentLogger } from '../../src/util/logger.js';
import { freePort, waitFor } from '../drivers/modbus-rig.js';
import { RawModbusClient, read } from '../helpers/modbus-tcp-client.js';

const words = (pdu: number[]): number[] => Array.from({ length: pdu[1]! / 2 }, (_, i) => (pdu[2 + i * 2]! << 8) | pdu[3 + i * 2]!);
const float32 = (hi: number, lo: number): number => {
  const view = new DataView(new ArrayBuffer(4));
  view.setUint16(0, hi);
  view.setUint16(2, lo);
  return view.getFloat32(0);
};

async function withGateway(servers: (port: number) => unknown[], fn: (g: Gateway, port: number) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'sg-door-gen-'));
  const port = await freePort();
  const raw = {
    gateway: { id: 'gen', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: {
      box: {
        points: [
          { name: 'count', type: 'int', sim: { fn: 'constant', value: -7 } },
          { name: 'temp', type: 'float', sim: { fn: 'constant', value: 21.5 } },
          { name: 'label', type: 'string', sim: { fn: 'constant', value: 'x' } },
          { name: 'setpoint', type: 'float', access: 'RW', sim: { fn: 'constant', value: 2.25 } },
        ],
      },
    },
    devices: [{ id: 'box', model: 'box', bus: 'sim', poll: '100ms' }],
    servers: servers(port),
  };
  const g = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
  try {
    await waitFor('box polled', () => g.shadow.GetDevicePoint('box', 'temp') === 21.5, 5000);
    await fn(g, port);
  } finally {
    await g.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

test('a generated map: on/off points as coils or discrete inputs, int32 and float32 registers in model order', () => {
  const map = generateMap({
    name: 'm', points: [
      { name: 'door', type: 'int', access: 'R', scale: 1, offset: 0, report: 'change', gpio: { pin: 17, direction: 'in' } },
      { name: 'relay', type: 'int', access: 'RW', scale: 1, offset: 0, report: 'change', gpio: { pin: 18, direction: 'out' } },
      { name: 'n', type: 'int', access: 'R', scale: 1, offset: 0, report: 'change' },
      { name: 's', type: 'string', access: 'R', scale: 1, offset: 0, report: 'change' },
      { name: 'f', type: 'float', access: 'R', scale: 1, offset: 0, report: 'change' },
      { name: 'w', type: 'float', access: 'W', scale: 1, offset: 0, report: 'change' },
      { name: 'sp', type: 'float', access: 'RW', scale: 1, offset: 0, report: 'change' },
    ],
  });
  assert.equal(map.map((e) => [e.point, e.table, e.address, e.kind]), [
    ['door', 'discrete', 0, 'bit'], ['relay', 'coil', 0, 'bit'], ['n', 'input', 0, 'int32'], ['f', 'input', 2, 'float32'], ['sp', 'holding', 0, 'float32'],
  ]);
});

test('on/off points: read from the shadow as bits, coils written through the write pipeline, an offline value is 0x0B', async () => {
  const values: Record<string, number | null> = { door: 1, relay: 0 };
  const written: WriteRequest[][] = [];
  const unit = new GeneratedUnit({
    deviceId: 'pins',
    map: [{ point: 'door', table: 'discrete', address: 0, kind: 'bit' }, { point: 'relay', table: 'coil', address: 0, kind: 'bit' }],
    value: (_id, point) => values[point] ?? null,
    io: { readPoint: async () => null, writePoints: async (_id, v) => { written.push([...v]); } },
  });
  assert.equal(unit.read({ fc: 2, address: 0, count: 1 }), [true]);
  assert.equal(unit.read({ fc: 1, address: 0, count: 1 }), [false]);
  await unit.write({ fc: 5, address: 0, value: true });
  assert.equal(written, [[{ name: 'relay', value: 1 }]]);
  const code = (fn: () => unknown): number | undefined => { try { fn(); return undefined; } catch (e) { return (e as UnitException).exception; } };
  assert.is(code(() => unit.read({ fc: 1, address: 1, count: 1 })), 2);
  values['door'] = null;
  assert.is(code(() => unit.read({ fc: 2, address: 0, count: 1 })), 11);
});

test('a simulator device through the server: its points from the shadow, holes 0x02, registers not writable', async () => {
  await withGateway((port) => [{ id: 'door', transport: 'tcp', host: '127.0.0.1', port, units: [{ unit: 3, device: 'box', writes: true }] }], async (g, port) => {
    const c = await RawModbusClient.open(port);
    try {
      const input = await c.request(1, 3, read(4, 0, 4));
      const w = words(input.pdu);
      assert.is((w[0]! << 16 | w[1]!) >> 0, -7);
      assert.is(float32(w[2]!, w[3]!), 21.5);
      const holding = words((await c.request(2, 3, read(3, 0, 2))).pdu);
      assert.is(float32(holding[0]!, holding[1]!), 2.25);
      assert.equal((await c.request(3, 3, read(4, 3, 2))).pdu, [0x84, 0x02], 'register 5 does not exist');
      assert.equal((await c.request(4, 3, [6, 0, 0, 0, 1])).pdu, [0x86, 0x01]);
      assert.equal((await c.request(5, 3, read(1, 0, 1))).pdu, [0x81, 0x02], 'no on/off points: no coils');
      assert.is(g.modbusServers.figures()['door']!.units['3']!.exceptions, 3);
    } finally {
      c.close();
    }
  });
});

test('32 clients at once are all served; a client outside the allow list is closed', async () => {
  await withGateway((port) => [{ id: 'door', transport: 'tcp', host: '127.0.0.1', port, allow: ['10.9.8.7'], units: [{ unit: 3, device: 'box' }] }], async (_g, port) => {
    const c = await RawModbusClient.open(port);
    const outcome = await c.request(1, 3, read(4, 0, 2), 2000).then(() => 'answered', (e: Error) => e.message);
    assert.is(outcome, 'connection closed by the server');
  });
  await withGateway((port) => [{ id: 'door', transport: 'tcp', host: '127.0.0.1', port, allow: ['127.0.0.1'], units: [{ unit: 3, device: 'box' }] }], async (g, port) => {
    const clients = await Promise.all(Array.from({ length: 32 }, () => RawModbusClient.open(port)));
    try {
      const answers = await Promise.all(clients.map((c, i) => c.request(i, 3, read(4, 2, 2))));
      assert.equal(answers.map((a) => a.tid), Array.from({ length: 32 }, (_, i) => i));
      for (const a of answers) assert.is(float32(...(words(a.pdu) as [number, number])), 21.5);
      assert.is(g.modbusServers.figures()['door']!.total.requests, 32);
    } finally {
      for (const c of clients) c.close();
    }
  });
});

test.run();
