import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { formatReference, parseReference, resolveAddress } from '../../../src/protocol/modbus/address.js';
import { exceptionMessage } from '../../../src/protocol/modbus/exceptions.js';

test('reference notation maps to table and 0-based address', () => {
  assert.equal(parseReference('40001'), { table: 'holding', address: 0 });
  assert.equal(parseReference('30010'), { table: 'input', address: 9 });
  assert.equal(parseReference('10001'), { table: 'discrete', address: 0 });
  assert.equal(parseReference('00017'), { table: 'coil', address: 16 });
  assert.equal(parseReference('465536'), { table: 'holding', address: 65535 });
  assert.match(String(parseReference('50001')), /invalid modbus reference/);
  assert.match(String(parseReference('40000')), /out of range/);
});

test('resolveAddress accepts numbers and references, refuses a reference from another table', () => {
  assert.is(resolveAddress(12, 'holding'), 12);
  assert.is(resolveAddress('40013', 'holding'), 12);
  assert.match(String(resolveAddress('30013', 'holding')), /input table, but the point says holding/);
  assert.match(String(resolveAddress(70000, 'holding')), /out of range/);
  assert.is(formatReference('holding', 0), '40001');
  assert.is(formatReference('input', 12345), '312346');
});

test('exception messages name code, meaning and unit', () => {
  assert.is(exceptionMessage(2, 1), 'modbus exception 2 (illegal data address) from unit 1');
  assert.is(exceptionMessage(99, 4), 'modbus exception 99 (unknown exception) from unit 4');
});


test('hex text is the 0-based wire address as manuals print it', () => {
  assert.is(resolveAddress('0x0156', 'input'), 0x156);
  assert.is(resolveAddress('0X0c83', 'holding'), 0x0c83);
  assert.is(resolveAddress('0xFFFF', 'holding'), 65535);
  assert.type(resolveAddress('0x10000', 'holding'), 'string');
});

test.run();
