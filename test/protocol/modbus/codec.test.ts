import { test } from 'uvu';
import { blockProblems } from '../../../src/protocol/modbus/block-check.js';
import * as assert from 'uvu/assert';
import type { ModbusPointBlock } from '../../../src/config/types.js';
import { GatewayError } from '../../../src/core/errors.js';
import {
  applyBit, decodeRegisters, encodeBit, encodeRegisters, pointWidth,
} from '../../../src/protocol/modbus/codec.js';

type DT = ModbusPointBlock['data_type'];
const blk = (data_type: DT, extra: Partial<ModbusPointBlock> = {}): ModbusPointBlock => ({
  table: 'holding', address: 0, data_type, word_order: 'big', byte_order: 'big', ...extra,
});

// Known register images, computed by hand from IEEE 754 / two's complement, not by the codec.
test('decodes every numeric type in big word and byte order', () => {
  assert.is(decodeRegisters(blk('int16'), [0xffff], 0), -1);
  assert.is(decodeRegisters(blk('uint16'), [0xc350], 0), 50000);
  assert.is(decodeRegisters(blk('int32'), [0xfffe, 0x1dc0], 0), -123456);
  assert.is(decodeRegisters(blk('uint32'), [0xb2d0, 0x5e00], 0), 3000000000);
  assert.is(decodeRegisters(blk('float32'), [0x4366, 0x8000], 0), 230.5);
  assert.is(decodeRegisters(blk('float64'), [0xc093, 0x4a45, 0x6d5c, 0xfaad], 0), -1234.5678);
  assert.is(decodeRegisters(blk('int64'), [0x0000, 0x011f, 0x71fb, 0x04cb], 0), 1234567890123);
  assert.is(decodeRegisters(blk('int64'), [0xffff, 0xffff, 0xffff, 0xfffe], 0), -2);
  assert.is(decodeRegisters(blk('uint64'), [0x0000, 0x0000, 0x0001, 0x0000], 0), 65536);
});

test('decodes at an offset inside a bridged response', () => {
  assert.is(decodeRegisters(blk('float32'), [9, 9, 9, 0x4366, 0x8000, 9], 3), 230.5);
});

test('word order little swaps registers, byte order little swaps bytes', () => {
  assert.is(decodeRegisters(blk('float32', { word_order: 'little' }), [0x8000, 0x4366], 0), 230.5);
  assert.is(decodeRegisters(blk('float32', { byte_order: 'little' }), [0x6643, 0x0080], 0), 230.5);
  assert.is(decodeRegisters(blk('float32', { byte_order: 'little', word_order: 'little' }), [0x0080, 0x6643], 0), 230.5);
  assert.is(decodeRegisters(blk('uint16', { byte_order: 'little' }), [0x3412], 0), 0x1234);
  assert.is(decodeRegisters(blk('uint32', { word_order: 'little' }), [0x5e00, 0xb2d0], 0), 3000000000);
  assert.is(decodeRegisters(blk('float64', { word_order: 'little' }), [0xfaad, 0x6d5c, 0x4a45, 0xc093], 0), -1234.5678);
});

test('bits inside a register and bool registers read as 0/1', () => {
  const word = [0b1010_0000_0000_0101];
  assert.is(decodeRegisters(blk('uint16', { bit: 0 }), word, 0), 1);
  assert.is(decodeRegisters(blk('uint16', { bit: 1 }), word, 0), 0);
  assert.is(decodeRegisters(blk('uint16', { bit: 15 }), word, 0), 1);
  assert.is(decodeRegisters(blk('int16', { bit: 13 }), word, 0), 1);
  assert.is(decodeRegisters(blk('bool'), [7], 0), 1);
  assert.is(decodeRegisters(blk('bool'), [0], 0), 0);
  // With byte_order little the device's low byte is the value's high byte.
  assert.is(decodeRegisters(blk('uint16', { bit: 8, byte_order: 'little' }), [0x0001], 0), 1);
});

test('strings: two characters per register, trailing NUL/space trimmed, byte swap honoured', () => {
  const regs = [0x5347, 0x2d52, 0x4947, 0x3031]; // "SG-RIG01"
  assert.is(decodeRegisters(blk('string', { length: 4 }), regs, 0), 'SG-RIG01');
  assert.is(decodeRegisters(blk('string', { length: 3 }), [0x4142, 0x4300, 0x5858], 0), 'ABC');
  assert.is(decodeRegisters(blk('string', { length: 2 }), [0x4142, 0x2020], 0), 'AB');
  assert.is(decodeRegisters(blk('string', { length: 1, byte_order: 'little' }), [0x4241], 0), 'AB');
});

test('encode is the inverse of decode for every type and order', () => {
  const cases: [DT, number | string][] = [
    ['int16', -32768], ['int16', 32767], ['uint16', 65535], ['int32', -2147483648], ['uint32', 4294967295],
    ['int64', -9007199254740991], ['uint64', 9007199254740991], ['float32', 230.5], ['float64', Math.PI],
  ];
  for (const [type, value] of cases) {
    for (const word_order of ['big', 'little'] as const) {
      for (const byte_order of ['big', 'little'] as const) {
        const b = blk(type, { word_order, byte_order });
        const words = encodeRegisters(b, value, 'p');
        assert.is(words.length, pointWidth(b));
        assert.ok(words.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffff));
        assert.is(decodeRegisters(b, words, 0), value, `${type} ${word_order}/${byte_order}`);
      }
    }
  }
  assert.equal(encodeRegisters(blk('float32'), 230.5, 'p'), [0x4366, 0x8000]);
  assert.equal(encodeRegisters(blk('float32', { word_order: 'little' }), 230.5, 'p'), [0x8000, 0x4366]);
  assert.equal(encodeRegisters(blk('string', { length: 3 }), 'ABC', 'p'), [0x4142, 0x4300, 0x0000]);
});

const throwsInvalid = (fn: () => unknown, match: RegExp): void => {
  try {
    fn();
  } catch (e) {
    assert.instance(e, GatewayError);
    assert.is((e as GatewayError).code, 'INVALID_VALUE');
    assert.match((e as Error).message, match);
    return;
  }
  assert.unreachable('expected INVALID_VALUE');
};

test('values that do not fit are refused with INVALID_VALUE naming the point', () => {
  throwsInvalid(() => encodeRegisters(blk('int16'), 32768, 'setpoint'), /32768 does not fit int16.*setpoint/);
  throwsInvalid(() => encodeRegisters(blk('uint16'), -1, 'p'), /does not fit uint16/);
  throwsInvalid(() => encodeRegisters(blk('uint32'), 4294967296, 'p'), /does not fit uint32/);
  throwsInvalid(() => encodeRegisters(blk('int16'), 1.5, 'p'), /not an integer/);
  throwsInvalid(() => encodeRegisters(blk('uint64'), 2 ** 60, 'p'), /does not fit uint64/);
  throwsInvalid(() => encodeRegisters(blk('float32'), 1e39, 'p'), /does not fit float32/);
  throwsInvalid(() => encodeRegisters(blk('float32'), Number.NaN, 'p'), /finite/);
  throwsInvalid(() => encodeRegisters(blk('int16'), 'abc', 'p'), /"abc" is not a number/);
  throwsInvalid(() => encodeRegisters(blk('string', { length: 1 }), 'ABC', 'p'), /does not fit 2/);
  throwsInvalid(() => encodeRegisters(blk('uint16', { table: 'input' }), 1, 'p'), /input table/);
  throwsInvalid(() => encodeRegisters(blk('uint16', { bit: 3 }), 2, 'p'), /not 0 or 1/);
  throwsInvalid(() => encodeBit(2, 'relay'), /not 0 or 1 for coil point relay/);
});

test('float noise from inverse scaling is rounded, booleans and numeric text accepted', () => {
  throwsInvalid(() => encodeRegisters(blk('int16'), 23.45 / 0.1, 'p'), /234.4999.* not an integer/); // a real half step
  assert.equal(encodeRegisters(blk('int16'), 2.35 / 0.01, 'p'), [235]); // 234.99999999999997
  assert.equal(encodeRegisters(blk('uint16'), '42', 'p'), [42]);
  assert.is(encodeBit(true, 'p'), true);
  assert.is(encodeBit(0, 'p'), false);
  assert.is(encodeBit('1', 'p'), true);
});

test('applyBit sets and clears one bit, keeping the others', () => {
  assert.is(applyBit(0b1000, blk('uint16', { bit: 0 }), 1), 0b1001);
  assert.is(applyBit(0b1001, blk('uint16', { bit: 3 }), 0), 0b0001);
  assert.is(applyBit(0x0000, blk('uint16', { bit: 8, byte_order: 'little' }), 1), 0x0001);
});

test('blockProblems (the one block check) flags impossible blocks, each at its key', () => {
  assert.equal(blockProblems(blk('float32')), []);
  assert.ok(blockProblems(blk('float32', { bit: 2 })).some((p) => p.key === 'bit' && /only for data_type int16, uint16, int32 or uint32/.test(p.message)));
  assert.ok(blockProblems(blk('uint16', { bit: 16 })).some((p) => p.key === 'bit' && /out of range/.test(p.message)));
  assert.ok(blockProblems(blk('string')).some((p) => p.key === 'length' && /is required/.test(p.message)));
  assert.ok(blockProblems(blk('uint16', { table: 'coil', bit: 1 })).some((p) => /register tables/.test(p.message)));
});


test('bit fields: several bits of a 16-bit register, flags of a 32-bit status word (read-only), read-modify-write keeps the rest', () => {
  // 0x1234 = 0001 0010 0011 0100: bits 4..7 hold 3, bits 12..15 hold 1.
  assert.is(decodeRegisters(blk('uint16', { bit: 4, bits: 4 }), [0x1234], 0), 3);
  assert.is(decodeRegisters(blk('uint16', { bit: 12, bits: 4 }), [0x1234], 0), 1);
  // A 32-bit event word 0x8000_0004 (high word first): bit 31 and bit 2 set, bit 20 clear.
  assert.is(decodeRegisters(blk('uint32', { bit: 31 }), [0x8000, 0x0004], 0), 1);
  assert.is(decodeRegisters(blk('uint32', { bit: 2 }), [0x8000, 0x0004], 0), 1);
  assert.is(decodeRegisters(blk('uint32', { bit: 20 }), [0x8000, 0x0004], 0), 0);
  assert.is(decodeRegisters(blk('uint32', { bit: 0, bits: 32 }), [0x8000, 0x0004], 0), 0x80000004);
  assert.is(decodeRegisters(blk('uint32', { bit: 16, bits: 8, word_order: 'little' }), [0x0004, 0x80ff], 0), 0xff);
  assert.equal(encodeRegisters(blk('uint16', { bit: 4, bits: 4 }), 9, 'mode'), [9]);
  assert.throws(() => encodeRegisters(blk('uint16', { bit: 4, bits: 4 }), 16, 'mode'), /value 16 does not fit 4 bits \(0..15\) for point mode/);
  assert.throws(() => encodeRegisters(blk('uint32', { bit: 3 }), 1, 'flag'), /bit field in a 32-bit register, which is read-only/);
  assert.is(applyBit(0x1234, blk('uint16', { bit: 4, bits: 4 }), 9), 0x1294);
  assert.equal(blockProblems(blk('uint32', { bit: 31 })), []);
  assert.equal(blockProblems(blk('uint16', { bit: 12, bits: 5 })).map((p) => p.message), ['bits 5 from bit 12 run past the 16-bit value']);
  assert.equal(blockProblems(blk('float32', { bit: 1 })).map((p) => p.key), ['bit']);
  assert.equal(blockProblems(blk('uint16', { bits: 2 })).map((p) => p.message), ['needs bit (where the field starts)']);
});

test.run();
