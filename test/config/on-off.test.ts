/** Which points the console shows as a switch, and the two values it writes. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { onOffStates } from '../../src/config/on-off.js';
import type { ModbusPointBlock } from '../../src/config/types.js';

const modbus = (m: Partial<ModbusPointBlock>): ModbusPointBlock => ({ table: 'holding', address: 0, data_type: 'uint16', ...m } as ModbusPointBlock);

test('coils, discrete inputs, bools, register bits and GPIO lines are on/off with 0 and 1', () => {
  assert.equal(onOffStates({ type: 'int', modbus: modbus({ table: 'coil', data_type: 'bool' }) }), [0, 1]);
  assert.equal(onOffStates({ type: 'int', modbus: modbus({ table: 'discrete', data_type: 'bool' }) }), [0, 1]);
  assert.equal(onOffStates({ type: 'int', modbus: modbus({ data_type: 'bool' }) }), [0, 1]);
  assert.equal(onOffStates({ type: 'int', modbus: modbus({ bit: 3 }) }), [0, 1]);
  assert.equal(onOffStates({ type: 'int', gpio: { line: 17 } as never }), [0, 1]);
});

test('a value map of exactly 0 and 1 is on/off with its meanings; other maps and plain numbers are not', () => {
  assert.equal(onOffStates({ type: 'string', values: { 1: 'on', 0: 'off' } }), ['off', 'on']);
  assert.equal(onOffStates({ type: 'int', values: { 0: 10, 1: 20 } }), [10, 20]);
  assert.is(onOffStates({ type: 'string', values: { 0: 'off', 1: 'on', 2: 'auto' } }), undefined);
  assert.is(onOffStates({ type: 'int', values: { 1: 9600, 2: 4800 } }), undefined);
  assert.is(onOffStates({ type: 'float', modbus: modbus({ data_type: 'float32' }) }), undefined);
  assert.is(onOffStates({ type: 'int', modbus: modbus({}) }), undefined);
  assert.is(onOffStates({ type: 'string', modbus: modbus({ data_type: 'string' }) }), undefined);
});

test.run();
