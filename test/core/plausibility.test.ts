/** The plausibility rules of `shadowgate probe` (src/core/plausibility.ts): each fires, and does not fire, at its bounds. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { implausibility, type PlausibilityPoint } from '../../src/core/plausibility.js';

const float = (unit?: string): PlausibilityPoint => ({ type: 'float', unit });
const int = (unit?: string): PlausibilityPoint => ({ type: 'int', unit });

/** Asserts the values pass and the others are flagged with a reason matching `why`. */
function rule(point: PlausibilityPoint, ok: number[], bad: number[], why: RegExp): void {
  for (const v of ok) assert.is(implausibility(point, v), null, `${v} ${point.unit ?? ''} should pass`);
  for (const v of bad) {
    const reason = implausibility(point, v);
    assert.ok(reason !== null, `${v} ${point.unit ?? ''} should be flagged`);
    assert.match(reason!, why);
  }
}

test('V: 0 has its own reason; outside 1..1000 is flagged', () => {
  assert.is(implausibility(float('V'), 0), '0 V: no voltage at the terminals or wrong register');
  rule(float('V'), [1, 12, 230.5, 400, 1000], [0.5, -230, 1000.1, 24000], /V is outside 1\.\.1000 V/);
  rule(int('V'), [231], [0, 5000], /V/);
});

test('Hz: outside 45..65 is flagged', () => {
  rule(float('Hz'), [45, 49.95, 50, 60, 65], [0, 44.99, 65.01, 231.5], /Hz is outside 45\.\.65 Hz/);
});

test('A: negative or above 10000 is flagged', () => {
  rule(float('A'), [0, 5.25, 10_000], [-0.1], /negative current/);
  rule(float('A'), [], [10_000.5, 65_535], /above 10000 A/);
});

test('power: magnitude above 1e7 W, in its unit; negative power (export) is fine', () => {
  rule(float('W'), [0, 1210, -5000, 1e7, -1e7], [1.1e7, -2e7], /W: magnitude above 1e7 W/);
  rule(float('kW'), [1e4, -250], [1.0001e4], /kW: magnitude above 1e4 kW/);
  rule(float('MW'), [10], [11], /MW: magnitude above 1e1 MW/);
  rule(float('VA'), [1e7], [2e7], /VA/);
  rule(float('kVA'), [9999], [20_000], /kVA/);
  rule(float('var'), [-1e7], [-1.5e7], /var/);
  rule(float('kvar'), [1e4], [1.5e4], /kvar/);
});

test('energy: negative, or above 1e12 Wh in its unit', () => {
  rule(float('kWh'), [0, 1234.5, 1e7], [-0.001], /negative energy counter/);
  rule(int('kWh'), [1e9], [1e9 + 1], /kWh is above 1e9 kWh/);
  rule(int('Wh'), [0, 1e12], [-1, 1e12 + 1], /Wh/);
  rule(int('MWh'), [1e6], [1e6 + 1], /MWh is above 1e6 MWh/);
  rule(int('kvarh'), [5], [-5, 2e9], /kvarh/);
  rule(int('varh'), [5], [-5], /varh: a negative energy counter/);
});

test('%, %RH: outside 0..100', () => {
  rule(float('%'), [0, 55.5, 100], [-1, 100.1], /% is outside 0\.\.100 %/);
  rule(float('%RH'), [0, 45, 100], [-0.5, 655.3], /%RH is outside 0\.\.100 %RH/);
});

test('°C: outside -60..150', () => {
  rule(float('°C'), [-60, -40, 21.5, 150], [-60.1, 150.1, 6553.5, -3276.8], /°C is outside -60\.\.150 °C/);
});

test('every numeric point: NaN and ±Infinity; float points: |value| ≥ 1e8 whatever the unit', () => {
  for (const p of [float(), float('V'), int(), int('kWh')]) {
    assert.match(implausibility(p, Number.NaN) ?? '', /^NaN: not a number/);
    assert.match(implausibility(p, Number.POSITIVE_INFINITY) ?? '', /^Infinity: not a finite number/);
    assert.match(implausibility(p, Number.NEGATIVE_INFINITY) ?? '', /^-Infinity: not a finite number/);
  }
  rule(float(), [0, 99_999_999, -99_999_999, 1e-30], [1e8, -1e8, 2.318e18], /≥ 1e8: a float this large/);
  // The float rule comes before the unit's: a huge voltage says "wrong word order", not "outside 1..1000".
  assert.match(implausibility(float('V'), 3e9) ?? '', /≥ 1e8/);
  assert.match(implausibility(float('kWh'), 2e8) ?? '', /≥ 1e8/, 'a float energy counter too');
  // An int point (a counter) may be that large: only its unit's rule applies.
  assert.is(implausibility(int(), 3e9), null);
  assert.is(implausibility(int('kWh'), 2e8), null);
  // Huge and tiny numbers are shown with 4 significant digits.
  assert.is(implausibility(float(), 2318425820281962500), '|2.318e+18| ≥ 1e8: a float this large is usually a wrong word order, data type or register');
  assert.is(implausibility(float('V'), -2.417940500192472e-41), '-2.418e-41 V is outside 1..1000 V');
});

test('no rule: other units, no unit, strings, string points; units match exactly', () => {
  for (const v of [-1e7, 0, 65_535]) {
    assert.is(implausibility(float('rpm'), v), null);
    assert.is(implausibility(float(), v), null);
    assert.is(implausibility(int('baud'), v), null);
  }
  assert.is(implausibility(float('V'), '230' as unknown as number), null, 'a string value');
  assert.is(implausibility({ type: 'string', unit: 'V' }, 0), null, 'a string point');
  assert.is(implausibility(float('v'), 0), null, 'unit case matters (v is not V)');
  assert.is(implausibility(float('mW'), 2e7), null, 'mW is not MW');
  assert.ok(implausibility(float(' V '), 0) !== null, 'surrounding blanks are ignored');
});

test.run();
