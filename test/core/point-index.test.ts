/**
 * Devices declared with the same points share one layout of names (memory per device: its slots only); a device
 * that gains a point gets its own copy and the others do not see the point; a snapshot taken before keeps the
 * names it had; the layout goes with its last device.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Shadow } from '../../src/core/shadow.js';
import { takeSnapshot } from '../../src/core/snapshot.js';
import { FakeClock } from '../helpers/fake-clock.js';

const points = [{ name: 'a' }, { name: 'b' }, { name: 'a' }, { name: 'c' }];

test('one layout per distinct point list; a point added to one device only', () => {
  const shadow = new Shadow({ maxDevices: 8, maxPoints: 64, defaultTtl: 30_000, clock: new FakeClock() });
  shadow.AddDevice('d1', 'm', undefined, { points });
  shadow.AddDevice('d2', 'm', undefined, { points });
  shadow.AddDevice('d3', 'other', undefined, { points: [{ name: 'x' }] });
  assert.is(shadow.table.layouts.size, 2);
  assert.is(shadow.stats().freePointSlots, 64 - 7, 'a name given twice takes one slot');
  shadow.SetDevicePoints('d1', { a: 1, b: 2, c: 3 });
  shadow.SetDevicePoints('d2', { a: 10, b: 20, c: 30 });
  const before = takeSnapshot(shadow, 0);
  shadow.SetWritePointValue('d1', 'extra', 5);
  assert.ok(shadow.HasPoint('d1', 'extra'));
  assert.not.ok(shadow.HasPoint('d2', 'extra'));
  assert.equal(Object.keys(shadow.GetDevicePoints('d1')), ['a', 'b', 'c', 'extra']);
  assert.equal(Object.keys(shadow.GetDevicePoints('d2')), ['a', 'b', 'c']);
  assert.equal(before.devices.find((d) => d.id === 'd1')!.points, ['a', 'b', 'c'], 'the snapshot keeps the names it had');
  assert.equal([shadow.GetDevicePoint('d1', 'b'), shadow.GetDevicePoint('d2', 'b')], [2, 20]);
  shadow.SetDevicePoints('d1', { more: 7 });
  assert.equal(Object.keys(shadow.GetDevicePoints('d1')), ['a', 'b', 'c', 'extra', 'more']);
  assert.is(shadow.GetDevicePoint('d1', 'more'), 7);
  shadow.DeleteDevice('d2');
  assert.is(shadow.table.layouts.size, 1, 'd1 has its own copy now, d2 was the last on the shared one');
  shadow.DeleteDevice('d1', 'd3');
  assert.is(shadow.table.layouts.size, 0);
  assert.is(shadow.stats().freePointSlots, 64, 'every slot back');
});

test.run();
