import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GatewayError } from '../../src/core/errors.js';
import type { ShadowEvents } from '../../src/core/events.js';
import { Shadow } from '../../src/core/shadow.js';
import { FakeClock } from '../helpers/fake-clock.js';

const TTL = 30_000;

function setup(opts: { maxDevices?: number; maxPoints?: number } = {}) {
  const clock = new FakeClock();
  const shadow = new Shadow({ maxDevices: opts.maxDevices ?? 8, maxPoints: opts.maxPoints ?? 64, defaultTtl: TTL, clock });
  const events: { type: keyof ShadowEvents; payload: unknown }[] = [];
  for (const type of ['dataChange', 'online', 'ShadowOffline', 'deviceAdded', 'deviceDeleted'] as const) {
    shadow.bus.on(events, type, (payload) => events.push({ type, payload }));
  }
  const of = (type: keyof ShadowEvents) => events.filter((e) => e.type === type).map((e) => e.payload as Record<string, unknown>);
  return { clock, shadow, events, of };
}

/** Records every state-machine step as "from>to". */
function trace(shadow: Shadow): string[] {
  const steps: string[] = [];
  shadow.bus.on(steps, 'stateChange', (e) => steps.push(`${e.from}>${e.to}`));
  return steps;
}

const code = (fn: () => unknown): string => {
  try {
    fn();
  } catch (err) {
    assert.instance(err, GatewayError);
    return (err as GatewayError).code;
  }
  throw new Error('expected a GatewayError');
};

test('code() fails when nothing throws, or when what is thrown is not a GatewayError', () => {
  // By hand: assert.throws rethrows uvu's own Assertion, which is what code() throws for a foreign error.
  const failure = (fn: () => unknown): string => {
    try {
      code(fn);
    } catch (err) {
      return (err as Error).message;
    }
    return 'code() passed';
  };
  assert.is(failure(() => 1), 'expected a GatewayError');
  assert.match(failure(() => { throw new Error('plain'); }), /instance of `GatewayError`/);
  assert.is(code(() => { throw new GatewayError('UNKNOWN_POINT', 'x'); }), 'UNKNOWN_POINT');
});

test('a new device is Offline with no data, zero times and the given ttl', () => {
  const { shadow } = setup();
  shadow.AddDevice('m1', 'meter', '1h30m');
  const [device, found] = shadow.GetDevice('m1');
  assert.ok(found);
  assert.is(device!.state, 'Offline');
  assert.is(device!.online, false);
  assert.is(device!.ttl, '1h30m0s');
  assert.is(device!.updatedAt, '0001-01-01T00:00:00Z');
  assert.equal(shadow.GetDevice('nope'), [null, false]);
  shadow.AddDevice('d2', 'x');
  assert.is(shadow.GetDevice('d2')[0]!.ttl, '30s', 'default ttl used when none given');
});

test('AddDevice on an existing id keeps the device as it is', () => {
  const { shadow } = setup();
  shadow.AddDevice('m1', 'meter');
  shadow.SetDevicePoint('m1', 'v', 1);
  shadow.AddDevice('m1', 'other', '1s');
  const [device] = shadow.GetDevice('m1');
  assert.is(device!.modelName, 'meter');
  assert.is(device!.points.v!.value, 1);
});

test('rule 1 and the table: first data moves Offline → Initializing → Online, sets updatedAt, resets failures', () => {
  const { shadow, clock, of } = setup();
  shadow.AddDevice('m1', 'meter');
  const steps = trace(shadow);
  shadow.SetDevicePoint('m1', 'v', 230.1);
  assert.equal(steps, ['Offline>Initializing', 'Initializing>Online']);
  assert.is(shadow.GetDeviceState('m1'), 'Online');
  assert.is(shadow.GetDeviceUpdateAt('m1'), clock.now());
  assert.equal(of('online').map((e) => e.online), [true]);
  shadow.MayBeOffline('m1');
  assert.is(shadow.GetDevice('m1')[0]!.disconnectTimes, 1);
  shadow.SetDevicePoint('m1', 'v', 230.2);
  assert.is(shadow.GetDevice('m1')[0]!.disconnectTimes, 0, 'data resets the counter');
  assert.is(shadow.GetDeviceState('m1'), 'Online', 'MaybeOffline → Online on data (retry succeeds)');
});

test('SetOnline on an Offline device: Initializing (alive, online) until a value arrives → Online', () => {
  const { shadow } = setup();
  shadow.AddDevice('m1', 'meter');
  const steps = trace(shadow);
  shadow.SetOnline('m1');
  assert.is(shadow.GetDeviceState('m1'), 'Initializing');
  assert.equal(steps, ['Offline>Initializing']);
  assert.is(shadow.GetDeviceStatus('m1'), true);
  shadow.SetDevicePoint('m1', 'v', 1);
  assert.is(shadow.GetDeviceState('m1'), 'Online');
});

test('rule 2: a success keeps the device online and the counter at 0; MaybeOffline → Online on retry ok', () => {
  const { shadow } = setup();
  shadow.AddDevice('m1', 'meter');
  shadow.SetDevicePoint('m1', 'v', 1);
  const steps = trace(shadow);
  shadow.MayBeOffline('m1');
  assert.is(shadow.GetDeviceState('m1'), 'MaybeOffline');
  assert.is(shadow.GetDeviceStatus('m1'), true, 'MaybeOffline is still online (failures below 3)');
  shadow.SetOnline('m1');
  assert.equal(steps, ['Online>MaybeOffline', 'MaybeOffline>Online']);
  assert.is(shadow.GetDeviceState('m1'), 'Online');
  assert.is(shadow.GetDevice('m1')[0]!.disconnectTimes, 0);
});

test('rules 3, 4, 6: the third failure sends the device offline with one ShadowOffline event', () => {
  const { shadow, clock, of } = setup();
  shadow.AddDevice('m1', 'meter');
  shadow.SetDevicePoint('m1', 'v', 1);
  clock.advance(1000);
  shadow.MayBeOffline('m1');
  shadow.MayBeOffline('m1');
  assert.is(shadow.GetDevice('m1')[0]!.disconnectTimes, 2);
  assert.is(shadow.GetDeviceStatus('m1'), true);
  const steps = trace(shadow);
  shadow.MayBeOffline('m1');
  assert.equal(steps, ['MaybeOffline>Offline'], 'MaybeOffline → Offline with 3 failures');
  assert.is(shadow.GetDeviceStatus('m1'), false);
  assert.is(shadow.GetDevice('m1')[0]!.disconnectTimes, 3);
  assert.equal(of('ShadowOffline').map((e) => e.reason), ['failures']);
  shadow.MayBeOffline('m1');
  assert.is(shadow.GetDevice('m1')[0]!.disconnectTimes, 3, 'already offline: nothing changes');
  assert.is(of('ShadowOffline').length, 1, 'raised once per transition');
});

test('rule 5 (★ OR): one failure more than 60 s after the last data sends the device offline', () => {
  const { clock, shadow, of } = setup();
  shadow.AddDevice('m1', 'meter', '10m');
  shadow.SetDevicePoint('m1', 'v', 1);
  clock.advance(60_000);
  shadow.MayBeOffline('m1');
  assert.is(shadow.GetDeviceStatus('m1'), true, 'exactly 60 s is not "more than"');
  clock.advance(1);
  shadow.MayBeOffline('m1');
  assert.is(shadow.GetDeviceStatus('m1'), false);
  assert.equal(of('ShadowOffline').map((e) => e.reason), ['no-data']);
});

test('rule 7 / TTL check: Online → Checking → Online within TTL, → Offline past it, per-device TTL honoured', () => {
  const { clock, shadow, of } = setup();
  shadow.AddDevice('short', 'm', '5s');
  shadow.AddDevice('long', 'm', '1m');
  shadow.SetDevicePoint('short', 'v', 1);
  shadow.SetDevicePoint('long', 'v', 1);
  clock.advance(5000);
  const steps = trace(shadow);
  shadow.CheckTTL();
  assert.equal(steps, ['Online>Checking', 'Checking>Online', 'Online>Checking', 'Checking>Online']);
  steps.length = 0;
  assert.is(shadow.GetDeviceState('short'), 'Online', 'not expired at exactly the TTL');
  clock.advance(1);
  shadow.CheckTTL();
  assert.is(shadow.GetDeviceState('short'), 'Offline');
  assert.is(shadow.GetDeviceState('long'), 'Online');
  assert.equal(steps.slice(0, 2), ['Online>Checking', 'Checking>Offline']);
  assert.equal(of('ShadowOffline'), [{ id: 'short', reason: 'ttl', time: clock.now() }]);
  assert.equal(of('online').filter((e) => e.online === false).map((e) => e.id), ['short']);
});

test('TTL check keeps a device with pending failures in MaybeOffline (Checking → MaybeOffline)', () => {
  const { clock, shadow } = setup();
  shadow.AddDevice('m1', 'm', '1m');
  shadow.SetDevicePoint('m1', 'v', 1);
  shadow.MayBeOffline('m1');
  clock.advance(1000);
  const steps = trace(shadow);
  shadow.CheckTTL();
  assert.is(shadow.GetDeviceState('m1'), 'MaybeOffline');
  assert.equal(steps, ['MaybeOffline>Checking', 'Checking>MaybeOffline']);
  clock.advance(60_000);
  shadow.CheckTTL();
  assert.is(shadow.GetDeviceState('m1'), 'Offline');
});

test('status refresh: Online → Refreshing → Online within TTL, Offline once it ran out (between sweeps)', () => {
  const { clock, shadow, of } = setup();
  shadow.AddDevice('m1', 'm', '5s');
  shadow.SetDevicePoint('m1', 'v', 1);
  const steps = trace(shadow);
  assert.is(shadow.GetDeviceStatus('m1'), true);
  assert.is(shadow.GetDeviceState('m1'), 'Online');
  clock.advance(5001);
  assert.is(shadow.GetDeviceStatus('m1'), false, 'no sweep ran, the refresh judges the TTL itself');
  assert.equal(steps, ['Online>Refreshing', 'Refreshing>Online', 'Online>Refreshing', 'Refreshing>Offline']);
  assert.equal(of('ShadowOffline').map((e) => e.reason), ['ttl']);
});

test('an offline device comes back online with new data and raises online again', () => {
  const { clock, shadow, of } = setup();
  shadow.AddDevice('m1', 'm', '5s');
  shadow.SetDevicePoint('m1', 'v', 1);
  clock.advance(6000);
  shadow.CheckTTL();
  shadow.SetDevicePoint('m1', 'v', 2);
  assert.is(shadow.GetDeviceState('m1'), 'Online');
  assert.equal(of('online').map((e) => e.online), [true, false, true]);
});

test('SetOffline forces offline once (event on transition only)', () => {
  const { shadow, of } = setup();
  shadow.AddDevice('m1', 'm');
  shadow.SetDevicePoint('m1', 'v', 1);
  shadow.SetOffline('m1');
  shadow.SetOffline('m1');
  assert.is(shadow.GetDeviceStatus('m1'), false);
  assert.equal(of('ShadowOffline').map((e) => e.reason), ['forced']);
});

test('rule 8: GetDevicePoint returns null when offline or past TTL, the value otherwise; misses count', () => {
  const { clock, shadow } = setup();
  shadow.AddDevice('m1', 'm', '10s');
  assert.is(shadow.GetDevicePoint('m1', 'v'), null, 'no such point yet: null, not an error');
  shadow.SetDevicePoints('m1', { v: 1.5, s: 'ok' });
  assert.is(shadow.GetDevicePoint('m1', 'v'), 1.5);
  assert.is(shadow.GetDevicePoint('m1', 's'), 'ok');
  clock.advance(8000);
  shadow.SetDevicePoint('m1', 's', 'ok');
  clock.advance(3000);
  assert.is(shadow.GetDevicePoint('m1', 'v'), null, 'point v older than the TTL');
  assert.is(shadow.GetDevicePoint('m1', 's'), 'ok', 'point s fresh');
  shadow.SetOffline('m1');
  assert.is(shadow.GetDevicePoint('m1', 's'), null, 'offline');
  assert.is(shadow.GetDevicePointDetails('m1', 's').value, 'ok', 'details still show the last value');
  const stats = shadow.stats();
  assert.is(stats.hitRate, 3 / 6);
  assert.is(code(() => shadow.GetDevicePoint('zz', 'v')), 'UNKNOWN_DEVICE');
});

test('rule 9: write values are stored with writeAt; a read never clears them', () => {
  const { clock, shadow } = setup();
  shadow.AddDevice('m1', 'm');
  assert.is(code(() => shadow.GetWritePointValue('m1', 'sp')), 'UNKNOWN_POINT', 'a point never read nor written has no write value: an error, not null');
  assert.is(code(() => shadow.GetDevicePointDetails('m1', 'sp')), 'UNKNOWN_POINT');
  shadow.SetDevicePoint('m1', 'r', 1);
  assert.is(shadow.GetWritePointValue('m1', 'r'), null, 'a point read but never written has no write value');
  assert.is(shadow.GetDevicePointDetails('m1', 'r').writeAt, '0001-01-01T00:00:00Z');
  shadow.SetWritePointValue('m1', 'sp', 21.5);
  const at = clock.now();
  clock.advance(100);
  shadow.SetDevicePoint('m1', 'sp', 21.4);
  assert.is(shadow.GetDevicePoint('m1', 'sp'), 21.4);
  assert.is(shadow.GetWritePointValue('m1', 'sp'), 21.5);
  const details = shadow.GetDevicePointDetails('m1', 'sp');
  assert.is(details.writeAt, new Date(at).toISOString());
  assert.is(details.writeValue, 21.5);
  shadow.SetWritePointValue('m1', 'mode', 'eco');
  assert.is(shadow.GetWritePointValue('m1', 'mode'), 'eco');
  assert.is(shadow.GetDevicePointDetails('m1', 'mode').value, null);
});

test('write values live only on written points: a deleted device\'s slots come back without them', () => {
  const { clock, shadow } = setup({ maxDevices: 2, maxPoints: 2 });
  shadow.AddDevice('a', 'm', undefined, { points: [{ name: 'p1' }, { name: 'p2' }] });
  const never = shadow.GetDevicePointDetails('a', 'p1').writeAt;
  shadow.SetWritePointValue('a', 'p1', 0);
  assert.is(shadow.GetWritePointValue('a', 'p1'), 0, 'a written 0 is a write value');
  clock.advance(50);
  shadow.SetWritePointValue('a', 'p2', -3.5);
  shadow.SetWritePointValue('a', 'p2', 'auto');
  assert.is(shadow.GetWritePointValue('a', 'p2'), 'auto');
  shadow.SetWritePointValue('a', 'p2', 7);
  assert.is(shadow.GetWritePointValue('a', 'p2'), 7);
  assert.is(shadow.GetDevicePointDetails('a', 'p2').writeAt, new Date(clock.now()).toISOString());
  shadow.DeleteDevice('a');
  shadow.AddDevice('b', 'm', undefined, { points: [{ name: 'q1' }, { name: 'q2' }] });
  for (const q of ['q1', 'q2']) {
    assert.is(shadow.GetWritePointValue('b', q), null);
    assert.is(shadow.GetDevicePointDetails('b', q).writeAt, never);
  }
});

test('dataChange fires only on changed values (or report always), one event per atomic update', () => {
  const { shadow, of } = setup();
  shadow.AddDevice('m1', 'm', undefined, { points: [{ name: 'a' }, { name: 'b' }, { name: 'pulse', report: 'always' }] });
  shadow.SetDevicePoints('m1', { a: 1, b: 2, pulse: 1 });
  shadow.SetDevicePoints('m1', { a: 1, b: 3, pulse: 1 });
  shadow.SetDevicePoints('m1', { a: 1, b: 3 });
  const changes = of('dataChange').map((e) => e.values);
  assert.equal(changes, [
    [{ name: 'a', value: 1 }, { name: 'b', value: 2 }, { name: 'pulse', value: 1 }],
    [{ name: 'b', value: 3 }, { name: 'pulse', value: 1 }],
  ]);
  shadow.SetDevicePoint('m1', 'a', '1');
  assert.equal(of('dataChange').at(-1)!.values, [{ name: 'a', value: '1' }], 'number → string is a change');
});

test('SetDevicePoints is all or nothing: a bad value or missing capacity changes nothing', () => {
  const { shadow, of } = setup({ maxPoints: 3 });
  shadow.AddDevice('m1', 'm');
  shadow.SetDevicePoints('m1', { a: 1, b: 2 });
  const before = shadow.GetDevice('m1')[0];
  assert.is(code(() => shadow.SetDevicePoints('m1', { a: 5, c: 3, d: 4 })), 'CAPACITY_POINTS');
  assert.is(code(() => shadow.SetDevicePoints('m1', { a: 5, b: Number.NaN })), 'INVALID_VALUE');
  assert.is(code(() => shadow.SetDevicePoints('m1', { a: 5, b: {} as never })), 'INVALID_VALUE');
  assert.equal(shadow.GetDevice('m1')[0], before);
  assert.is(of('dataChange').length, 1);
});

test('versions increase on every change; a stale expected version is a conflict and changes nothing', () => {
  const { shadow } = setup();
  shadow.AddDevice('m1', 'm');
  const v0 = shadow.GetDeviceVersion('m1');
  shadow.SetDevicePoint('m1', 'a', 1);
  const v1 = shadow.GetDeviceVersion('m1');
  assert.ok(v1 > v0);
  shadow.SetDevicePoints('m1', { a: 2 }, { expectedVersion: v1 });
  assert.ok(shadow.GetDeviceVersion('m1') > v1);
  assert.is(code(() => shadow.SetDevicePoints('m1', { a: 3 }, { expectedVersion: v1 })), 'VERSION_CONFLICT');
  assert.is(shadow.GetDevicePoint('m1', 'a'), 2);
});

test('capacity: devices and points beyond the fixed table are refused with clear errors, slots are reused', () => {
  const { shadow } = setup({ maxDevices: 2, maxPoints: 4 });
  // Every array column of the table as allocated: "does not grow" means these very objects at these lengths.
  const columns = () => Object.entries(shadow.table)
    .filter((e): e is [string, ArrayLike<unknown>] => Array.isArray(e[1]) || ArrayBuffer.isView(e[1]))
    .map(([name, column]) => ({ name, column, length: column.length }));
  const before = columns();
  assert.ok(before.length >= 10, `found ${before.map((c) => c.name).join(', ')}: not the table's columns`);
  shadow.AddDevice('a', 'm', undefined, { points: [{ name: 'p1' }, { name: 'p2' }, { name: 'p3' }] });
  assert.throws(() => shadow.AddDevice('b', 'm', undefined, { points: [{ name: 'p1' }, { name: 'p2' }] }), /max_points 4/);
  shadow.AddDevice('b', 'm');
  assert.throws(() => shadow.AddDevice('c', 'm'), /max_devices 2/);
  assert.is(code(() => shadow.AddDevice('c', 'm')), 'CAPACITY_DEVICES');
  shadow.DeleteDevice('a');
  assert.is(shadow.stats().freePointSlots, 4);
  shadow.AddDevice('c', 'm', undefined, { points: [{ name: 'p1' }, { name: 'p2' }, { name: 'p3' }, { name: 'p4' }] });
  assert.is(shadow.stats().dataPoints, 4);
  for (let i = 0; i < 100; i++) shadow.SetDevicePoint('c', 'p1', i);
  shadow.SetDevicePoint('c', 'p2', 'text');
  shadow.SetWritePointValue('c', 'p3', 'on');
  shadow.DeleteDevice('c');
  shadow.AddDevice('c', 'm', undefined, { points: [{ name: 'q1' }, { name: 'q2' }] });
  const after = columns();
  assert.equal(after.map((c) => c.name), before.map((c) => c.name));
  for (const [i, c] of after.entries()) {
    assert.ok(c.column === before[i]!.column, `the table does not grow: ${c.name} was replaced`);
    assert.is(c.length, before[i]!.length, `the table does not grow: ${c.name}`);
  }
});

test('DeleteDevice destroys the shadow, ignores unknown ids, raises deviceDeleted', () => {
  const { shadow, of } = setup();
  shadow.AddDevice('a', 'm');
  shadow.AddDevice('b', 'm');
  shadow.SetDevicePoint('a', 'v', 1);
  shadow.DeleteDevice('a', 'zz');
  assert.is(shadow.HasDevice('a'), false);
  assert.equal(of('deviceDeleted'), [{ id: 'a' }]);
  assert.is(code(() => shadow.SetDevicePoint('a', 'v', 1)), 'UNKNOWN_DEVICE');
  shadow.AddDevice('a', 'm');
  assert.equal(shadow.GetDevicePoints('a'), {}, 'a re-added device starts empty');
});

test('unknown device and unknown point errors carry the seed text and stable codes', () => {
  const { shadow } = setup();
  shadow.AddDevice('a', 'm');
  for (const fn of [
    () => shadow.SetDevicePoint('x', 'v', 1), () => shadow.GetDevicePoints('x'), () => shadow.GetDeviceUpdateAt('x'),
    () => shadow.GetDeviceStatus('x'), () => shadow.SetOnline('x'), () => shadow.SetOffline('x'), () => shadow.MayBeOffline('x'),
    () => shadow.SetWritePointValue('x', 'v', 1), () => shadow.GetWritePointValue('x', 'v'),
  ]) {
    assert.throws(fn, (e: unknown) => e instanceof GatewayError && e.code === 'UNKNOWN_DEVICE' && e.message === 'unknown device');
  }
  assert.throws(() => shadow.GetDevicePointDetails('a', 'nope'), (e: unknown) => (e as Error).message === 'unknown point: nope');
});

test('GetDevices is sorted by id; stats count online devices and points', () => {
  const { shadow } = setup();
  shadow.AddDevice('b', 'm');
  shadow.AddDevice('a', 'm');
  shadow.SetDevicePoints('b', { x: 1, y: 2 });
  assert.equal(shadow.GetDevices().map((d) => d.id), ['a', 'b']);
  const stats = shadow.stats();
  assert.is(stats.totalDevices, 2);
  assert.is(stats.onlineDevices, 1);
  assert.is(stats.dataPoints, 2);
  assert.is(stats.states.Offline, 1);
});

test('a throwing listener is contained and the others still run', () => {
  const { shadow } = setup();
  const seen: string[] = [];
  shadow.bus.on('bad', 'dataChange', () => {
    throw new Error('boom');
  });
  shadow.bus.on('good', 'dataChange', (e) => seen.push(e.id));
  shadow.AddDevice('a', 'm');
  shadow.SetDevicePoint('a', 'v', 1);
  assert.equal(seen, ['a']);
  shadow.bus.off('good');
  shadow.SetDevicePoint('a', 'v', 2);
  assert.equal(seen, ['a']);
});

test('a TTL sweep that changes no state is no change: nothing to save (an idle gateway writes nothing)', () => {
  const { shadow, clock } = setup();
  shadow.AddDevice('m1', 'm', 60_000);
  shadow.SetDevicePoint('m1', 'a', 1);
  const seq = shadow.changeSeq;
  for (let i = 0; i < 5; i++) {
    clock.advance(1000);
    shadow.CheckTTL();
  }
  assert.is(shadow.changeSeq, seq);
  clock.advance(60_000);
  shadow.CheckTTL();
  assert.is(shadow.GetDeviceState('m1'), 'Offline');
  assert.ok(shadow.changeSeq > seq, 'going offline is a change');
});

test('a point the device reports "not available" is null with its reason, the device stays online, a value clears it', () => {
  const { shadow, of } = setup();
  shadow.AddDevice('em', 'em111', TTL, { points: [{ name: 'voltage' }, { name: 'current' }] });
  shadow.SetDevicePoints('em', { voltage: 230.1, current: 5 });
  shadow.SetDevicePoints('em', { current: 5.25 }, { unavailable: { voltage: 'overflow' } });
  assert.is(shadow.GetDevicePoint('em', 'voltage'), null);
  assert.is(shadow.GetDevicePoint('em', 'current'), 5.25);
  assert.is(shadow.GetPointRecord('em', 'voltage').reason, 'overflow');
  assert.is(shadow.GetDevicePointDetails('em', 'voltage').reason, 'overflow');
  assert.is(shadow.GetDeviceState('em'), 'Online');
  const last = of('dataChange').at(-1) as { values: { name: string; value: unknown; reason?: string }[] };
  assert.equal(last.values, [{ name: 'current', value: 5.25 }, { name: 'voltage', value: null, reason: 'overflow' }]);
  const events = of('dataChange').length;
  shadow.SetDevicePoints('em', { current: 5.25 }, { unavailable: { voltage: 'overflow' } });
  assert.is(of('dataChange').length, events, 'the same reason again is no change');
  shadow.SetDevicePoints('em', { voltage: 229.9 });
  assert.is(shadow.GetDevicePoint('em', 'voltage'), 229.9);
  assert.is(shadow.GetPointRecord('em', 'voltage').reason, undefined);
});

test.run();
