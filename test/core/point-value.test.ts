import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { fromRaw, toRaw } from '../../src/core/point-value.js';

const temp = { name: 'temp', type: 'float' as const, scale: 0.1, offset: -40, decimals: 1 };
const relay = { name: 'relay', type: 'int' as const };
const label = { name: 'label', type: 'string' as const };

test('inbound: scale, offset and decimals; ints are rounded; bits read as 0/1', () => {
  assert.is(fromRaw(temp, 653), 25.3);
  assert.is(fromRaw({ name: 'x', type: 'float' }, 1 / 3), 1 / 3, 'no decimals: untouched');
  assert.is(fromRaw(relay, true), 1);
  assert.is(fromRaw(relay, false), 0);
  assert.is(fromRaw({ name: 'n', type: 'int', scale: 0.5 }, 3), 2);
  assert.is(fromRaw(label, 12), '12');
  assert.is(fromRaw(relay, 'garbage'), undefined);
  assert.is(fromRaw(relay, Number.NaN), undefined);
});

test('outbound: type checked, scale/offset inverted, query-string text accepted', () => {
  assert.equal(toRaw(temp, 25.3).value, 25.3);
  assert.ok(Math.abs((toRaw(temp, 25.3).raw as number) - 653) < 1e-9);
  assert.equal(toRaw(temp, '21.5'), { value: 21.5, raw: (21.5 + 40) / 0.1 });
  assert.equal(toRaw(relay, '1'), { value: 1, raw: 1 });
  assert.equal(toRaw(relay, true), { value: 1, raw: 1 });
  assert.equal(toRaw(relay, 'false'), { value: 0, raw: 0 });
  assert.equal(toRaw(label, 'eco'), { value: 'eco', raw: 'eco' });
  assert.equal(toRaw(label, 5), { value: '5', raw: '5' });
});

test('outbound: clear errors naming the value and the point', () => {
  assert.throws(() => toRaw(temp, 'abc'), /^value "abc" is not a float for point temp$/);
  assert.throws(() => toRaw(relay, 1.5), /value 1.5 is not an int for point relay/);
  assert.throws(() => toRaw(relay, '1.5'), /not an int/);
  assert.throws(() => toRaw(relay, null), /value null is not an int/);
  assert.throws(() => toRaw(relay, {}), /not an int/);
  assert.throws(() => toRaw(temp, ''), /not a float/);
  assert.throws(() => toRaw(temp, 'Infinity'), /not a float/);
  assert.throws(() => toRaw(label, { a: 1 }), /not a string for point label/);
  assert.throws(() => toRaw(relay, 1e20), /out of range for int point relay/);
  assert.throws(() => toRaw(temp, 1e308), /out of range for point temp/, 'its raw value overflows');
});

test('outbound: the model\'s min/max bound writes, naming the range; a boolean is 1/0 within them', () => {
  const bounded = { name: 'relay', type: 'int' as const, min: 0, max: 1 };
  assert.equal(toRaw(bounded, 1), { value: 1, raw: 1 });
  assert.equal(toRaw(bounded, true), { value: 1, raw: 1 }, 'as driver-box: a boolean writes 1 or 0');
  assert.throws(() => toRaw(bounded, 5), /^value 5 is above the highest value 1 of point relay \(0\.\.1\)$/);
  assert.throws(() => toRaw(bounded, '-1'), /^value "-1" is below the lowest value 0 of point relay \(0\.\.1\)$/);
  const low = { name: 'sp', type: 'float' as const, min: 5, scale: 0.1 };
  assert.throws(() => toRaw(low, 4.9), /below the lowest value 5 of point sp \(at least 5\)/);
  assert.equal(toRaw(low, 1e6).value, 1e6, 'no max: only the register bounds it');
});

test('a huge float keeps its value both ways: 1e308 with decimals reads back as 1e308, never Infinity', () => {
  const setpoint = { name: 'setpoint', type: 'float' as const, decimals: 1 };
  assert.equal(toRaw(setpoint, 1e308), { value: 1e308, raw: 1e308 });
  assert.is(fromRaw(setpoint, 1e308), 1e308);
  assert.is(fromRaw({ name: 'x', type: 'float', scale: 10 }, 1e308), undefined, 'overflow by the scale: no value');
});


test('a value nested deep or of the wrong shape is refused with a short text, never a throw of its own', async () => {
  const { toRaw } = await import('../../src/core/point-value.js');
  let deep: unknown = 1;
  for (let i = 0; i < 50_000; i++) deep = [deep];
  assert.throws(() => toRaw({ name: 'sp', type: 'float' }, deep), /value an array is not a float for point sp/);
  assert.throws(() => toRaw({ name: 'sp', type: 'string' }, { a: 1 }), /value an object is not a string for point sp/);
});

test.run();
