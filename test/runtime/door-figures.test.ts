/** A Modbus server's latency figures: each answer in one bucket (upper bound inclusive), for the total, its client and its unit. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Figures, LATENCY_BOUNDS_S } from '../../src/runtime/door/figures.js';

test('latency lands in the first bucket whose bound it does not exceed; over all bounds in the last', () => {
  const f = new Figures();
  f.count('10.0.0.5', 1, 'hit');
  f.latency('10.0.0.5', 1, 0.0004);
  f.count('10.0.0.5', 1, 'miss');
  f.latency('10.0.0.5', 1, 0.001); // exactly a bound: that bucket
  f.count('10.0.0.6', 2, { exception: 11 });
  f.latency('10.0.0.6', 2, 9);
  const s = f.snapshot();
  const at = (bound: number): number => LATENCY_BOUNDS_S.indexOf(bound as (typeof LATENCY_BOUNDS_S)[number]);
  assert.is(s.units['1']!.latency.buckets[at(0.0005)], 1);
  assert.is(s.units['1']!.latency.buckets[at(0.001)], 1);
  assert.is(s.units['2']!.latency.buckets[LATENCY_BOUNDS_S.length], 1, 'over 5 s: the last bucket');
  assert.is(s.clients['10.0.0.5']!.latency.count, 2);
  assert.ok(Math.abs(s.clients['10.0.0.5']!.latency.sum - 0.0014) < 1e-12);
  assert.is(s.total.latency.count, 3);
  assert.is(s.total.latency.buckets.reduce((a, b) => a + b, 0), 3);
});

test.run();
