import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GatewayError } from '../../src/core/errors.js';
import { Shadow } from '../../src/core/shadow.js';
import type { Driver, PointWrite, RawValue } from '../../src/drivers/types.js';
import { createDeviceIO } from '../../src/io/device-io.js';
import { createShadowSink } from '../../src/io/sink.js';
import { silentLogger } from '../../src/util/logger.js';
import { resolved } from '../helpers/devices.js';
import { FakeClock } from '../helpers/fake-clock.js';

/** A recording driver: registers hold raw values; reads return them; faults on demand. */
function fakeDriver(opts: { canRead?: boolean } = {}) {
  const regs: Record<string, RawValue> = { temp: 653, sp: 215, relay: 0, mode: 'eco' };
  const calls: string[] = [];
  let failWrites = false;
  let failReads = false;
  const driver: Driver = {
    busId: 'sim',
    start: async () => {},
    stop: async () => {},
    write: async (id, values: readonly PointWrite[]) => {
      calls.push(`write ${id} ${values.map((v) => `${v.name}=${v.value}`).join(',')}`);
      if (failWrites) throw new Error('port closed');
      for (const v of values) regs[v.name] = v.name === 'sp' ? Math.round(v.value as number) : v.value; // the device rounds
    },
  };
  if (opts.canRead !== false) {
    driver.read = async (id, names) => {
      calls.push(`read ${id} ${names.join(',')}`);
      if (failReads) throw new GatewayError('DRIVER_TIMEOUT', 'timed out');
      return Object.fromEntries(names.map((n) => [n, regs[n]!]));
    };
  }
  return { driver, calls, regs, fail: (w: boolean, r: boolean) => ((failWrites = w), (failReads = r)) };
}

function setup(canRead = true) {
  const clock = new FakeClock();
  const shadow = new Shadow({ maxDevices: 4, maxPoints: 32, defaultTtl: 60_000, clock });
  const dev = resolved('hvac', [
    { name: 'temp', scale: 0.1, offset: -40, decimals: 1 },
    { name: 'sp', access: 'RW', scale: 0.1 },
    { name: 'relay', type: 'int', access: 'RW' },
    { name: 'mode', type: 'string', access: 'W' },
  ]);
  shadow.AddDevice('hvac', 'm', undefined, { points: dev.model.points });
  const devices = new Map([['hvac', dev]]);
  const fake = fakeDriver({ canRead });
  const sink = createShadowSink(shadow, devices, silentLogger);
  const io = createDeviceIO({ shadow, devices, drivers: new Map([['sim', fake.driver]]), sink, log: silentLogger });
  return { clock, shadow, io, fake, sink };
}

const message = async (p: Promise<unknown>): Promise<string> => {
  try {
    await p;
  } catch (err) {
    return (err as Error).message;
  }
  return 'no error';
};

test('readPoint does a real read through the driver and returns the scaled shadow value', async () => {
  const { io, fake, shadow } = setup();
  assert.is(await io.readPoint('hvac', 'temp'), 25.3);
  assert.equal(fake.calls, ['read hvac temp']);
  assert.is(shadow.GetDeviceState('hvac'), 'Online');
});

test('seed errors: unknown device, read-only point, driver that cannot read', async () => {
  const { io } = setup();
  assert.is(await message(io.readPoint('nope', 'temp')), 'unknown device');
  assert.is(await message(io.writePoints('nope', [{ name: 'sp', value: 1 }])), 'unknown device');
  assert.is(await message(io.writePoints('hvac', [{ name: 'temp', value: 1 }])), 'point is readonly, can not write');
  assert.is(await message(io.readPoint('hvac', 'nope')), 'unknown point: nope');
  assert.match(await message(io.readPoint('hvac', 'mode')), /writeonly/);
  const noRead = setup(false);
  assert.is(await message(noRead.io.readPoint('hvac', 'temp')), 'the protocol does not support getting connector');
});

test('rule 9: write stores writeValue, sends the raw value, reads back at once; shadow holds what was read', async () => {
  const { io, fake, shadow } = setup();
  await io.writePoints('hvac', [{ name: 'sp', value: '21.47' }]);
  assert.equal(fake.calls, ['write hvac sp=214.7', 'read hvac sp']);
  assert.is(shadow.GetWritePointValue('hvac', 'sp'), 21.47);
  assert.is(shadow.GetDevicePoint('hvac', 'sp'), 21.5, 'the value read back, not the value sent');
});

test('a batch is validated whole first: one bad entry sends and stores nothing', async () => {
  const { io, fake, shadow } = setup();
  for (const bad of [
    [{ name: 'sp', value: 20 }, { name: 'relay', value: 'abc' }],
    [{ name: 'sp', value: 20 }, { name: 'temp', value: 1 }],
    [{ name: 'sp', value: 20 }, { name: 'ghost', value: 1 }],
    [{ name: 'sp', value: 20 }, { name: 'sp', value: 21 }],
  ]) {
    assert.is.not(await message(io.writePoints('hvac', bad)), 'no error');
  }
  assert.is(await message(io.writePoints('hvac', [])), 'values must be a non-empty array');
  assert.equal(fake.calls, []);
  assert.is(shadow.GetWritePointValue('hvac', 'sp'), null);
  assert.is(await message(io.writePoints('hvac', [{ name: 'relay', value: 'abc' }])), 'value "abc" is not an int for point relay');
});

test('a batch goes out as one driver write; write-only points are not read back', async () => {
  const { io, fake } = setup();
  await io.writePoints('hvac', [{ name: 'relay', value: 1 }, { name: 'sp', value: 22 }, { name: 'mode', value: 'auto' }]);
  assert.equal(fake.calls, ['write hvac relay=1,sp=220,mode=auto', 'read hvac relay,sp']);
});

test('failed writes and reads feed MayBeOffline and surface a clear error; 3 failures → offline', async () => {
  const { io, fake, shadow } = setup();
  await io.readPoint('hvac', 'temp');
  fake.fail(true, true);
  assert.is(await message(io.writePoints('hvac', [{ name: 'sp', value: 20 }])), 'device request failed: port closed');
  assert.is(await message(io.readPoint('hvac', 'temp')), 'timed out');
  assert.is(shadow.GetDevice('hvac')[0]!.disconnectTimes, 2);
  await message(io.readPoint('hvac', 'temp'));
  assert.is(shadow.GetDeviceState('hvac'), 'Offline');
  assert.is(shadow.GetWritePointValue('hvac', 'sp'), 20, 'the attempted control value is recorded');
});

test('sink: unknown points and impossible raw values are dropped, the rest applied atomically', () => {
  const { sink, shadow } = setup();
  sink.data('hvac', { temp: 653, relay: 'zz', ghost: 1 });
  assert.is(shadow.GetDevicePoint('hvac', 'temp'), 25.3);
  assert.is(shadow.GetDevicePoint('hvac', 'relay'), null);
  sink.failure('hvac', new Error('x'));
  assert.is(shadow.GetDevice('hvac')[0]!.disconnectTimes, 1);
  sink.data('unknown-device', { a: 1 });
});

test.run();
