/** The REST mapping in isolation: time texts, byte and percent texts, device and point shapes. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { formatBytes, formatLocalTime, formatPercent, shadowAllJson, toRestDevice, toRestStats } from '../../src/api/index.js';
import { Shadow } from '../../src/core/shadow.js';
import { T0 } from './helpers.js';

const prevTz = process.env.TZ;
const restoreTz = (): void => {
  if (prevTz === undefined) delete process.env.TZ;
  else process.env.TZ = prevTz;
};

test('formatLocalTime: epoch ms and ISO text give the same local text; zero time both ways', () => {
  process.env.TZ = 'America/New_York';
  try {
    assert.is(formatLocalTime(T0), '2024-03-05 01:07:08');
    assert.is(formatLocalTime('2024-03-05T06:07:08.999Z'), '2024-03-05 01:07:08');
    assert.is(formatLocalTime(0), '0001-01-01 00:00:00');
    assert.is(formatLocalTime('0001-01-01T00:00:00Z'), '0001-01-01 00:00:00');
    assert.is(formatLocalTime('not a time'), '0001-01-01 00:00:00');
    assert.is(formatLocalTime(Date.UTC(2024, 11, 31, 23, 59, 59)), '2024-12-31 18:59:59');
  } finally {
    restoreTz();
  }
});

test('formatBytes and formatPercent', () => {
  assert.is(formatBytes(512), '512 B');
  assert.is(formatBytes(2048), '2.0 KB');
  assert.is(formatBytes(4.2 * 1024 * 1024), '4.2 MB');
  assert.is(formatBytes(3 * 1024 ** 3), '3.0 GB');
  assert.is(formatPercent(Number.NaN), '0.00%');
  assert.is(formatPercent(0.975), '97.50%');
  assert.is(formatPercent(1), '100.00%');
});

test('toRestDevice / shadowAllJson / toRestStats from a real shadow', () => {
  process.env.TZ = 'UTC';
  try {
    const clock = { now: () => T0, mono: () => 0 };
    const shadow = new Shadow({ maxDevices: 4, maxPoints: 8, defaultTtl: 30_000, clock });
    assert.equal(shadowAllJson(shadow), []);
    shadow.AddDevice('b', 'mb', undefined, { points: [{ name: 'p' }] });
    shadow.AddDevice('a', 'ma', '1h30m');
    shadow.SetDevicePoint('b', 'p', 'on');
    shadow.SetWritePointValue('b', 'p', 'off');
    const [device] = shadow.GetDevice('b');
    assert.equal(toRestDevice(device!), {
      id: 'b', model: 'mb', online: true, state: 'Online', ttl: '30s', disconnect_times: 0,
      updated_at: '2024-03-05 06:07:08', version: device!.version,
      points: [{ name: 'p', value: 'on', write_value: 'off', updated_at: '2024-03-05 06:07:08', write_time: '2024-03-05 06:07:08' }],
    });
    assert.equal(shadowAllJson(shadow).map((d) => [d.id, d.ttl]), [['a', '1h30m0s'], ['b', '30s']]);
    const stats = toRestStats(shadow.stats());
    assert.equal([stats.totalDevices, stats.onlineDevices, stats.dataPoints, stats.cacheHitRate], [2, 1, 1, '0.00%']);
  } finally {
    restoreTz();
  }
});

test.run();
