/** Write planning (FC05/06/15/16 choice, contiguity, caps, validation before send) and device degradation. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ModbusPointBlock } from '../../src/config/types.js';
import { GatewayError } from '../../src/core/errors.js';
import { DeviceHealth } from '../../src/drivers/modbus/device-health.js';
import type { ModbusPoint } from '../../src/drivers/modbus/device-plan.js';
import { planWrites } from '../../src/drivers/modbus/writer.js';
import { pointWidth } from '../../src/protocol/modbus/codec.js';

const pt = (name: string, b: Partial<ModbusPointBlock> & Pick<ModbusPointBlock, 'table' | 'address' | 'data_type'>): ModbusPoint => {
  const block: ModbusPointBlock = { word_order: 'big', byte_order: 'big', ...b };
  return { name, block, width: pointWidth(block), access: 'RW', pollMs: 1000 };
};

test('single register FC06, single coil FC05, contiguous runs FC16/FC15, gaps split', () => {
  const ops = planWrites([
    { point: pt('a', { table: 'holding', address: 10, data_type: 'uint16' }), value: 1 },
    { point: pt('f', { table: 'holding', address: 20, data_type: 'float32' }), value: 230.5 },
    { point: pt('g', { table: 'holding', address: 22, data_type: 'int16' }), value: -1 },
    { point: pt('c1', { table: 'coil', address: 0, data_type: 'bool' }), value: 1 },
    { point: pt('c2', { table: 'coil', address: 1, data_type: 'bool' }), value: 0 },
    { point: pt('c9', { table: 'coil', address: 9, data_type: 'bool' }), value: true },
  ]);
  assert.equal(ops, [
    { kind: 'wire', req: { fc: 15, address: 0, values: [true, false] } },
    { kind: 'wire', req: { fc: 5, address: 9, value: true } },
    { kind: 'wire', req: { fc: 6, address: 10, value: 1 } },
    { kind: 'wire', req: { fc: 16, address: 20, values: [0x4366, 0x8000, 0xffff] } },
  ]);
});

test('a lone float32 is FC16 (two registers); runs split at 123 registers without cutting a value', () => {
  const single = planWrites([{ point: pt('f', { table: 'holding', address: 0, data_type: 'float32' }), value: 1 }]);
  assert.is((single[0] as { req: { fc: number } }).req.fc, 16);
  const many = Array.from({ length: 70 }, (_, i) => ({ point: pt(`p${i}`, { table: 'holding', address: i * 2, data_type: 'float32' }), value: i }));
  const ops = planWrites(many);
  assert.is(ops.length, 2);
  const lens = ops.map((o) => (o as { req: { values: number[] } }).req.values.length);
  assert.equal(lens, [122, 18]);
});

test('bits of one register become one read-modify-write; a bad value anywhere refuses the whole batch', () => {
  const ops = planWrites([
    { point: pt('b0', { table: 'holding', address: 5, data_type: 'uint16', bit: 0 }), value: 1 },
    { point: pt('b3', { table: 'holding', address: 5, data_type: 'uint16', bit: 3 }), value: 0 },
  ]);
  assert.is(ops.length, 1);
  assert.is(ops[0]!.kind, 'bits');
  for (const bad of [
    [{ point: pt('a', { table: 'holding', address: 0, data_type: 'uint16' }), value: 1 }, { point: pt('b', { table: 'holding', address: 1, data_type: 'int16' }), value: 99999 }],
    [{ point: pt('i', { table: 'input', address: 0, data_type: 'uint16' }), value: 1 }],
    [{ point: pt('x', { table: 'holding', address: 0, data_type: 'float32' }), value: 1 }, { point: pt('y', { table: 'holding', address: 1, data_type: 'uint16' }), value: 1 }],
  ]) {
    assert.throws(() => planWrites(bad), (e: unknown) => e instanceof GatewayError && e.code === 'INVALID_VALUE');
  }
});

test('degradation: after 3 failures skipped, probed once per probe period (clamped, no doubling), restored by an answer', () => {
  const h = new DeviceHealth({ failuresToDegrade: 3, minBackoffMs: 1000, maxBackoffMs: 4000 });
  h.failed(0, 1500); h.failed(10, 1500);
  assert.not.ok(h.degraded);
  assert.ok(h.suspect);
  h.failed(20, 1500);
  assert.ok(h.degraded);
  assert.not.ok(h.mayPoll(500));
  assert.ok(h.mayPoll(1520));
  h.failed(1820, 1500, 1520);
  assert.is(h.probeAt, 3020, 'the same period again, from when the probe was asked (not from its timeout 300 ms later): a unit that comes back is seen within one period however long it was away');
  h.failed(2000, 1500, 100);
  assert.is(h.probeAt, 3020, 'a probe that waited in the queue never moves the next one earlier than another failure put it');
  h.failed(3020, 200);
  assert.is(h.probeAt, 4020, 'at least minBackoffMs');
  h.failed(4020, 9000);
  assert.is(h.probeAt, 8020, 'at most maxBackoffMs');
  h.answered();
  assert.not.ok(h.degraded);
  assert.ok(h.mayPoll(4021));
});

test('a probe claims its period when it goes on the line: requests meanwhile are paused, not a timeout each', () => {
  const h = new DeviceHealth({ failuresToDegrade: 1, minBackoffMs: 1000, maxBackoffMs: 4000 });
  h.claim(0, 1200);
  assert.is(h.probeAt, 0, 'a healthy unit claims nothing');
  h.failed(0, 1200);
  assert.ok(h.mayPoll(1200));
  h.claim(1200, 1200);
  assert.not.ok(h.mayPoll(1250), 'while the probe waits for its answer, the next request is paused');
  h.failed(1500, 1200, 1200);
  assert.is(h.probeAt, 2400, 'its timeout leaves the period counted from when it was sent');
  h.claim(2400, 1200);
  h.answered();
  assert.ok(h.mayPoll(2450), 'an answer ends the claim with the degradation');
});


test('a device that refuses FC06 gets a lone register, and a bit\'s read-modify-write, as FC16; its FC16 cap splits runs', () => {
  const fc16 = { singleAsFc16: true, maxRegisters: 4 };
  const ops = planWrites([
    { point: pt('addr', { table: 'holding', address: 0x15, data_type: 'uint16' }), value: 3 },
    { point: pt('a', { table: 'holding', address: 100, data_type: 'float32' }), value: 1 },
    { point: pt('b', { table: 'holding', address: 102, data_type: 'float32' }), value: 2 },
    { point: pt('c', { table: 'holding', address: 104, data_type: 'float32' }), value: 3 },
  ], fc16);
  assert.equal(ops.map((o) => (o.kind === 'wire' ? [o.req.fc, o.req.address, 'values' in o.req ? o.req.values.length : 1] : [])), [[16, 0x15, 1], [16, 100, 4], [16, 104, 2]]);
  assert.throws(() => planWrites([{ point: pt('d', { table: 'holding', address: 0, data_type: 'float64' }), value: 1 }], { singleAsFc16: false, maxRegisters: 2 }), /needs 4 registers; the device takes at most 2 per write/);
});

test.run();
