/**
 * A persona unit on a real shadow with a clock the test moves: the SDM630 library model served from
 * shadow points, encoded as the model reads it (decoded back with the codec and compared), unbound
 * registers as NaN / sentinels (never 0), the stale policies, store / forward / reject writes.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import type { ModelConfig } from '../../src/config/types.js';
import { GatewayError } from '../../src/core/errors.js';
import type { DeviceIO, WriteRequest } from '../../src/core/io.js';
import { Shadow } from '../../src/core/shadow.js';
import { decodeRegisters } from '../../src/protocol/modbus/codec.js';
import { PersonaUnit, type PersonaUnitConfig } from '../../src/runtime/persona/unit.js';
import { missingWords } from '../../src/runtime/persona/map.js';
import { FakeClock } from '../helpers/fake-clock.js';

const models = validateConfig({ gateway: { id: 't', data_dir: '/tmp' } }, { env: {} }).models;
const sdm630 = models['eastron-sdm630']!;

const readPdu = (fc: 3 | 4, address: number, count: number): Uint8Array => Uint8Array.of(fc, address >> 8, address & 0xff, count >> 8, count & 0xff);
const words = (pdu: Uint8Array | null): number[] => {
  assert.ok(pdu, 'expected an answer, got silence');
  assert.is(pdu[0]! & 0x80, 0, `exception ${pdu[1]}`);
  return Array.from({ length: pdu[1]! / 2 }, (_, i) => (pdu[2 + i * 2]! << 8) | pdu[3 + i * 2]!);
};
const point = (model: ModelConfig, name: string) => model.points.find((p) => p.name === name)!;
const f32 = (model: ModelConfig, name: string, regs: number[], offset: number): number =>
  decodeRegisters(point(model, name).modbus!, regs, offset) as number;

function setup(extra: Partial<PersonaUnitConfig> = {}, io?: DeviceIO) {
  const clock = new FakeClock();
  const shadow = new Shadow({ maxDevices: 8, maxPoints: 64, defaultTtl: 60_000, clock });
  shadow.AddDevice('p1', 'x');
  const unit = new PersonaUnit({
    unit: 2, model: sdm630, maxAgeMs: 5000, stale: 'silent',
    bind: { voltage_l1: 'p1.u1', total_power: { point: 'p1.p', negate: true }, current_l1: { sum: ['p1.i1', 'p1.i2'] } },
    ...extra,
  }, { shadow, clock, ...(io ? { io } : {}) });
  unit.start();
  return { clock, shadow, unit };
}

test('bound points are encoded as the model reads them; unbound registers are NaN, not 0', async () => {
  const { shadow, unit } = setup();
  shadow.SetDevicePoints('p1', { u1: 231.5, p: -1500, i1: 1.25, i2: 2 });
  const regs = words(await unit.answer(readPdu(4, 0, 8)));
  assert.is(f32(sdm630, 'voltage_l1', regs, 0), 231.5);
  assert.ok(Number.isNaN(f32(sdm630, 'voltage_l2', regs, 2)), 'unbound voltage_l2 must be NaN');
  assert.is(f32(sdm630, 'current_l1', regs, 6), 3.25);
  const addr = point(sdm630, 'total_power').modbus!.address;
  assert.is(f32(sdm630, 'total_power', words(await unit.answer(readPdu(4, addr, 2))), 0), 1500);
  // A source change shows at once (a rebuilt snapshot).
  shadow.SetDevicePoints('p1', { u1: 240 });
  assert.is(f32(sdm630, 'voltage_l1', words(await unit.answer(readPdu(4, 0, 2))), 0), 240);
});

test('integer sentinels for unbound integers; a declared invalid pattern wins', () => {
  const block = { table: 'holding', address: 0, word_order: 'big', byte_order: 'big' } as const;
  const p = { name: 'x', type: 'int', access: 'R', scale: 1, offset: 0, report: 'change' } as const;
  assert.equal(missingWords(p, { ...block, data_type: 'int16' }), [0x8000]);
  assert.equal(missingWords(p, { ...block, data_type: 'uint32' }), [0xffff, 0xffff]);
  assert.equal(missingWords(p, { ...block, data_type: 'int32', word_order: 'little' }), [0x0000, 0x8000]);
  assert.equal(missingWords({ ...p, invalid: [{ raw: '0x7FFF', reason: 'n/a' }] }, { ...block, data_type: 'int16' }), [0x7fff]);
});

test('stale: silent past max_age, back on the first new sample (same value), never silent while fresh', async () => {
  const { clock, shadow, unit } = setup();
  assert.is(await unit.answer(readPdu(4, 0, 2)), null, 'no sample yet: silent');
  shadow.SetDevicePoints('p1', { u1: 230, p: 0, i1: 0, i2: 0 });
  words(await unit.answer(readPdu(4, 0, 2)));
  clock.advance(5000);
  words(await unit.answer(readPdu(4, 0, 2)));
  clock.advance(1);
  assert.is(await unit.answer(readPdu(4, 0, 2)), null);
  shadow.SetDevicePoints('p1', { u1: 230, p: 0, i1: 0, i2: 0 });
  assert.is(f32(sdm630, 'voltage_l1', words(await unit.answer(readPdu(4, 0, 2))), 0), 230);
});

test('a source the device marks "not available" answers not-implemented; the other registers are still served', async () => {
  const { shadow, unit } = setup();
  shadow.SetDevicePoints('p1', { p: 100, i1: 1, i2: 1 }, { unavailable: { u1: 'overflow' } });
  const regs = words(await unit.answer(readPdu(4, 0, 8)));
  assert.ok(Number.isNaN(f32(sdm630, 'voltage_l1', regs, 0)));
  assert.is(f32(sdm630, 'current_l1', regs, 6), 2);
});

test('stale: exception answers 0x0B; hold serves the last snapshot', async () => {
  const ex = setup({ stale: 'exception' });
  assert.equal([...(await ex.unit.answer(readPdu(4, 0, 2)))!], [0x84, 0x0b]);
  const hold = setup({ stale: 'hold' });
  hold.shadow.SetDevicePoints('p1', { u1: 228, p: 0, i1: 0, i2: 0 });
  hold.clock.advance(60_000);
  assert.is(f32(sdm630, 'voltage_l1', words(await hold.unit.answer(readPdu(4, 0, 2))), 0), 228);
});

test('a read outside the map is 0x02; FC3 reads holding registers, not the input ones', async () => {
  const { shadow, unit } = setup();
  shadow.SetDevicePoints('p1', { u1: 230, p: 0, i1: 0, i2: 0 });
  assert.equal([...(await unit.answer(readPdu(4, 0x4000, 2)))!], [0x84, 0x02]);
  assert.equal([...(await unit.answer(readPdu(3, 0, 2)))!], [0x83, 0x02]);
});

const model: ModelConfig = {
  name: 'cfg', points: [
    { name: 'mode', type: 'int', access: 'RW', scale: 1, offset: 0, report: 'change', modbus: { table: 'holding', address: 0xa000, data_type: 'uint16', word_order: 'big', byte_order: 'big' } },
    { name: 'limit', type: 'float', access: 'RW', scale: 0.1, offset: 0, report: 'change', modbus: { table: 'holding', address: 0xa001, data_type: 'int16', word_order: 'big', byte_order: 'big' } },
    { name: 'fixed', type: 'int', access: 'RW', scale: 1, offset: 0, report: 'change', modbus: { table: 'holding', address: 0xa002, data_type: 'uint16', word_order: 'big', byte_order: 'big' } },
  ],
};

test('writes: store reads back as written, forward reaches the device through the pipeline, reject is 0x02', async () => {
  const sent: { id: string; values: readonly WriteRequest[] }[] = [];
  let fail = false;
  const io: DeviceIO = {
    readPoint: async () => null,
    writePoints: async (id, values) => {
      if (fail) throw new GatewayError('DRIVER_TIMEOUT', 'timeout');
      sent.push({ id, values });
    },
  };
  const { shadow, unit } = setup({ model, bind: { limit: { point: 'inv.limit', scale: 2 }, fixed: { value: 5 } }, write: { mode: 'store', limit: 'forward' } }, io);
  shadow.AddDevice('inv', 'y');
  shadow.SetDevicePoints('inv', { other: 1 });
  assert.is(await unit.answer(readPdu(3, 0xa000, 3)), null, 'the bound limit has no value yet: silent');
  shadow.SetDevicePoints('inv', { limit: 1 });
  assert.equal(words(await unit.answer(readPdu(3, 0xa000, 3))), [0xffff, 20, 5], 'nothing stored: sentinel; limit 1 / 2 / 0.1; the constant');
  assert.equal([...(await unit.answer(Uint8Array.of(6, 0xa0, 0x00, 0, 7)))!], [6, 0xa0, 0, 0, 7]);
  assert.equal(words(await unit.answer(readPdu(3, 0xa000, 1))), [7]);
  assert.equal([...(await unit.answer(Uint8Array.of(6, 0xa0, 0x01, 0, 50)))!], [6, 0xa0, 1, 0, 50]);
  assert.equal(sent, [{ id: 'inv', values: [{ name: 'limit', value: 2.5 }] }], '50 × 0.1 = 5 at the persona, 2.5 at the source (bound × 2)');
  fail = true;
  assert.equal([...(await unit.answer(Uint8Array.of(6, 0xa0, 0x01, 0, 60)))!], [0x86, 0x0b], "the device's failure, not a silent accept");
  assert.equal([...(await unit.answer(Uint8Array.of(6, 0xa0, 0x02, 0, 9)))!], [0x86, 0x02]);
  assert.equal(words(await unit.answer(readPdu(3, 0xa002, 1))), [5]);
});

test('a value and its scale factor come from the same snapshot while the source changes', async () => {
  const sunspecLike: ModelConfig = {
    name: 'sf', points: [
      { name: 'W', type: 'float', access: 'R', scale: 1, offset: 0, report: 'change', scale_factor: 'W_SF', modbus: { table: 'holding', address: 40088, data_type: 'int16', word_order: 'big', byte_order: 'big' } },
      { name: 'W_SF', type: 'int', access: 'R', scale: 1, offset: 0, report: 'change', modbus: { table: 'holding', address: 40092, data_type: 'int16', word_order: 'big', byte_order: 'big' } },
    ],
  };
  const { shadow, unit } = setup({ model: sunspecLike, bind: { W: 'p1.w', W_SF: 'p1.sf' } });
  const written = new Set<number>();
  for (let i = 0; i < 2000; i++) {
    // The power moves across decades, so the scale factor has to move with it.
    const sf = (i % 5) - 2;
    const w = ((i * 7919) % 30000) * 10 ** sf;
    written.add(Math.round(w * 1000));
    shadow.SetDevicePoints('p1', { w, sf });
    const regs = words(await unit.answer(readPdu(3, 40088, 5)));
    const raw = regs[0]! >= 0x8000 ? regs[0]! - 0x10000 : regs[0]!;
    const exp = regs[4]! >= 0x8000 ? regs[4]! - 0x10000 : regs[4]!;
    assert.is(exp, sf);
    assert.ok(written.has(Math.round(raw * 10 ** exp * 1000)), `W ${raw} x 10^${exp} was never the source`);
  }
});

test('the SunSpec meter persona: "SunS", model 1, model 203 and the end marker walk; W with its scale factor; not-implemented sentinels', async () => {
  const meter = models['sunspec-meter-203']!;
  const { shadow, unit } = setup({ model: meter, bind: { power: 'p1.p', import_energy: 'p1.e' } });
  shadow.SetDevicePoints('p1', { p: -2500, e: 123456 });
  const at = (address: number, count: number) => unit.answer(readPdu(3, address, count)).then(words);
  assert.equal(await at(40000, 2), [0x5375, 0x6e53], 'SunS');
  const [id1, l1] = await at(40002, 2);
  assert.equal([id1, l1], [1, 65]);
  const next = 40004 + l1!;
  const [id2, l2] = await at(next, 2);
  assert.equal([id2, l2], [203, 105]);
  assert.equal(await at(next + 2 + l2!, 2), [0xffff, 0], 'end marker');
  const block = await at(next, 107);
  const int16 = (w: number): number => (w >= 0x8000 ? w - 0x10000 : w);
  assert.is(int16(block[18]!) * 10 ** int16(block[22]!), -2500, 'W x 10^W_SF');
  assert.is(block[2], 0x8000, 'unbound A: int16 not implemented');
  assert.equal([block[38], block[39]], [0, 0], 'unbound TotWhExp: acc32 not implemented');
  assert.is(block[46]! * 65536 + block[47]!, 123456);
  assert.equal([block[105], block[106]], [0xffff, 0xffff], 'Evt bitfield32 not implemented');
});

test.run();
