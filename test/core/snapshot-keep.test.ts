/**
 * A kept total (a GPIO pulse counter's, PointSpec `keep`) survives a restore past the device TTL — a long
 * power cut must not reset a meter's count to 0 — while every other value past its TTL is still dropped.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Shadow } from '../../src/core/shadow.js';
import { restoreSnapshot, takeSnapshot } from '../../src/core/snapshot.js';

const T0 = Date.UTC(2026, 0, 1);
const TTL = 60_000;

function meter(now: { t: number }): Shadow {
  const shadow = new Shadow({ maxDevices: 4, maxPoints: 16, defaultTtl: TTL, clock: { now: () => now.t, mono: () => now.t } });
  shadow.AddDevice('meter', 's0', TTL, { points: [{ name: 'energy', keep: true }, { name: 'power' }] });
  return shadow;
}

test('restored after 8 hours off (past the TTL): the kept total is back, the rate is dropped', () => {
  const now = { t: T0 };
  const a = meter(now);
  a.SetDevicePoints('meter', { energy: 1234.567, power: 850 });
  const snap = takeSnapshot(a, now.t);
  now.t += 8 * 3600_000;
  const b = meter(now);
  const report = restoreSnapshot(b, snap, now.t);
  assert.is(report.expiredValues, 1, 'only the rate expired');
  assert.is(b.LastValues('meter', 'energy').value, 1234.567);
  assert.is(b.LastValues('meter', 'power').value, null);
  // Kept, but 8 hours old: shown with its saved time, the device is offline until the driver reports.
  assert.is(b.GetDeviceState('meter'), 'Offline');
  assert.is(b.GetPointRecord('meter', 'energy').updatedAt, T0);
});

test('within the TTL both come back as before', () => {
  const now = { t: T0 };
  const a = meter(now);
  a.SetDevicePoints('meter', { energy: 5, power: 100 });
  const snap = takeSnapshot(a, now.t);
  now.t += 10_000;
  const b = meter(now);
  assert.is(restoreSnapshot(b, snap, now.t).expiredValues, 0);
  assert.is(b.LastValues('meter', 'energy').value, 5);
  assert.is(b.LastValues('meter', 'power').value, 100);
});

test.run();
