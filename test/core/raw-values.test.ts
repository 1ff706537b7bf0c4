/**
 * Issue 12: a device's own markers are not measurements. An overflowing EM111 voltage (0x7FFFFFFF) is null
 * "overflow", never 214748364.7 V; a SunSpec "not implemented" value is null; a coded value maps to its
 * meaning; a SunSpec scale factor scales; all as values a user sees.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { interpretRaw, markerValue, type RawPointModel } from '../../src/core/raw-values.js';
import { toRaw } from '../../src/core/point-value.js';

const pt = (name: string, extra: Partial<RawPointModel> = {}): RawPointModel => ({ name, type: 'float', scale: 1, offset: 0, ...extra });
const map = (...points: RawPointModel[]) => new Map(points.map((p) => [p.name, p]));

test('hex markers are bit patterns of the data type', () => {
  assert.is(markerValue('0x8000', 'int16'), -32768);
  assert.is(markerValue('0xFFFF', 'uint16'), 65535);
  assert.is(markerValue('0x7FFFFFFF', 'int32'), 2147483647);
  assert.is(markerValue('0xFFFFFFFF', 'int32'), -1);
  assert.is(markerValue('0xFFFFFFFF', 'uint32'), 4294967295);
  assert.ok(Number.isNaN(markerValue('0x7FC00000', 'float32')));
  assert.is(markerValue(-5, 'int16'), -5);
});

test('an overflow marker makes the value null with its reason, the neighbours keep theirs', () => {
  const voltage = pt('voltage', { scale: 0.1, decimals: 1, invalid: [{ raw: '0x7FFFFFFF', reason: 'overflow' }], modbus: { data_type: 'int32' } });
  const current = pt('current', { scale: 0.001 });
  const out = interpretRaw(map(voltage, current), { voltage: 2147483647, current: 5250 });
  assert.equal(out.unavailable, { voltage: 'overflow' });
  assert.equal(out.values, { current: 5.25 });
  const ok = interpretRaw(map(voltage, current), { voltage: 2301, current: 5250 });
  assert.equal(ok.values, { voltage: 230.1, current: 5.25 });
  assert.equal(ok.unavailable, {});
});

test('a NaN or infinite float is not available, not dropped silently', () => {
  const out = interpretRaw(map(pt('a'), pt('b')), { a: Number.NaN, b: Number.POSITIVE_INFINITY });
  assert.equal(out.unavailable, { a: 'not a number (NaN)', b: 'infinite' });
});

test('coded values map to their meaning both ways; an unknown code is null with the code', () => {
  const baud = pt('baud_rate', { type: 'int', values: { 0: 2400, 1: 4800, 2: 9600 } });
  const state = pt('state', { type: 'string', values: { 1: 'off', 4: 'mppt' } });
  const out = interpretRaw(map(baud, state), { baud_rate: 1, state: 4 });
  assert.equal(out.values, { baud_rate: 4800, state: 'mppt' });
  assert.equal(interpretRaw(map(baud), { baud_rate: 7 }).unavailable, { baud_rate: 'unknown code 7' });
  assert.equal(toRaw(baud, '9600'), { value: 9600, raw: 2 });
  assert.equal(toRaw(state, 'off'), { value: 'off', raw: 1 });
  assert.throws(() => toRaw(baud, 19200), /value 19200 is not one of 2400, 4800, 9600 for point baud_rate/);
});

test('a scale factor scales by 10^sf, from the same update or the last one kept', () => {
  const sf = pt('a_sf', { type: 'int', invalid: [{ raw: '0x8000', reason: 'not implemented' }], modbus: { data_type: 'int16' } });
  const amps = pt('a', { scale_factor: 'a_sf', invalid: [{ raw: '0xFFFF', reason: 'not implemented' }], modbus: { data_type: 'uint16' } });
  const watts = pt('w', { scale_factor: 'w_sf' });
  const points = map(sf, amps, watts, pt('w_sf', { type: 'int' }));
  assert.equal(interpretRaw(points, { a: 2305, a_sf: -1, w: 123, w_sf: 1 }).values, { a: 230.5, a_sf: -1, w: 1230, w_sf: 1 });
  assert.equal(interpretRaw(points, { a: 2305 }, (n) => (n === 'a_sf' ? -2 : undefined)).values, { a: 23.05 });
  assert.equal(interpretRaw(points, { a: 2305 }).unavailable, { a: 'scale factor a_sf not read' });
  // A scale factor that is itself "not implemented" leaves the value without a scale.
  assert.equal(interpretRaw(points, { a: 2305, a_sf: -32768 }).unavailable, { a: 'scale factor a_sf not available', a_sf: 'not implemented' });
  assert.equal(interpretRaw(points, { a: 65535, a_sf: -1 }).unavailable, { a: 'not implemented' });
});

test.run();
