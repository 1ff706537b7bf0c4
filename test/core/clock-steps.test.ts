/**
 * Rule 11 (issue 11 item 3): durations run on the monotonic clock, so a wall-clock step of ±30 days (NTP
 * correcting a Pi that booted without an RTC) changes no state; a restored value whose age cannot be
 * trusted (clock not synchronized, or saved "in the future") is kept and shown but not served as fresh.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Shadow } from '../../src/core/shadow.js';
import { restoreSnapshot, takeSnapshot } from '../../src/core/snapshot.js';
import { FakeClock } from '../helpers/fake-clock.js';

const DAY = 86_400_000;
const TTL = 30_000;

function online(clock: FakeClock): Shadow {
  const shadow = new Shadow({ maxDevices: 4, maxPoints: 16, defaultTtl: TTL, clock });
  shadow.AddDevice('m', 'model', TTL, { points: [{ name: 'v' }] });
  shadow.SetDevicePoints('m', { v: 1 });
  return shadow;
}

test('a wall-clock step of +30 days expires nothing; one of -30 days keeps the TTL running', () => {
  const clock = new FakeClock();
  const shadow = online(clock);
  const offline: string[] = [];
  shadow.bus.on(offline, 'ShadowOffline', (e) => offline.push(e.reason));
  clock.stepWall(30 * DAY);
  shadow.CheckTTL();
  assert.is(shadow.GetDeviceState('m'), 'Online');
  assert.is(shadow.GetDevicePoint('m', 'v'), 1);
  // The 60 s rule: one failure right after the step is one failure, not "no data for a month".
  shadow.MayBeOffline('m');
  assert.is(shadow.GetDeviceState('m'), 'MaybeOffline');
  shadow.SetDevicePoints('m', { v: 2 });
  clock.stepWall(-60 * DAY);
  clock.advance(TTL - 1000);
  shadow.CheckTTL();
  assert.is(shadow.GetDeviceState('m'), 'Online', 'a backward step does not stretch or cut the TTL');
  clock.advance(2000);
  shadow.CheckTTL();
  assert.is(shadow.GetDeviceState('m'), 'Offline', 'the TTL still ends on time');
  assert.is(shadow.GetDevicePoint('m', 'v'), null);
  assert.equal(offline, ['ttl']);
});

test('restore: a trusted age goes on; an untrusted one (clock not synchronized, or a future save) is not fresh', () => {
  const clock = new FakeClock();
  const saved = online(clock);
  saved.SetWritePointValue('m', 'v', 5);
  const snap = takeSnapshot(saved, clock.now());

  // Trusted, 10 s later: still fresh, and expires 20 s later on the monotonic clock.
  const c1 = new FakeClock(clock.now() + 10_000);
  const s1 = new Shadow({ maxDevices: 4, maxPoints: 16, defaultTtl: TTL, clock: c1 });
  s1.AddDevice('m', 'model', TTL, { points: [{ name: 'v' }] });
  restoreSnapshot(s1, snap, c1.now());
  assert.is(s1.GetDevicePoint('m', 'v'), 1);
  c1.advance(21_000);
  s1.CheckTTL();
  assert.is(s1.GetDeviceState('m'), 'Offline');

  // The clock is 720 h behind the save (booted without RTC, not synchronized): kept, not fresh.
  for (const [label, at, trusted] of [['saved in the future', clock.now() - 720 * 3_600_000, true], ['not synchronized', clock.now() + 1000, false]] as const) {
    const c = new FakeClock(at);
    const s = new Shadow({ maxDevices: 4, maxPoints: 16, defaultTtl: TTL, clock: c });
    s.AddDevice('m', 'model', TTL, { points: [{ name: 'v' }] });
    restoreSnapshot(s, snap, c.now(), { trusted });
    s.CheckTTL();
    assert.is(s.GetDeviceState('m'), 'Offline', label);
    assert.is(s.GetDevicePoint('m', 'v'), null, `${label}: not served as fresh`);
    assert.is(s.GetDeviceRecord('m')!.points[0]!.value, 1, `${label}: still shown with its saved time`);
    assert.is(s.GetWritePointValue('m', 'v'), 5, `${label}: the write value is kept`);
    s.SetDevicePoints('m', { v: 3 });
    assert.is(s.GetDevicePoint('m', 'v'), 3, `${label}: fresh data is served at once`);
    assert.is(s.GetDeviceState('m'), 'Online');
  }
});

test.run();
