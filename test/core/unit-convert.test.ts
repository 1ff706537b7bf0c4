import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { unitFactor } from '../../src/core/unit-convert.js';

test('unit factors: prefixes of one quantity, a power factor between fraction and percent, nothing else guessed', () => {
  assert.is(unitFactor('kW', 'W', 'power'), 1000);
  assert.is(unitFactor('Wh', 'kWh', 'energy'), 0.001);
  assert.is(unitFactor('kvarh', 'varh', 'q'), 1000);
  assert.is(unitFactor(undefined, '%', 'power_factor'), 100);
  assert.is(unitFactor(undefined, '%', 'pf_a'), 100);
  assert.is(unitFactor('%', undefined, 'total_power_factor'), 0.01);
  assert.is(unitFactor(undefined, '%', 'humidity'), 1, 'a unitless value is not a fraction unless it is a power factor');
  assert.is(unitFactor(undefined, '%', 'pf_sf'), 1, 'a scale factor is an exponent');
  assert.is(unitFactor('V', 'A', 'x'), 1, 'another quantity: unchanged');
  assert.is(unitFactor('°C', '°C', 't'), 1);
});

test.run();
