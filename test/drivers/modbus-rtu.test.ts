/**
 * modbus-rtu against an independent pymodbus slave over a real socat pty pair (scripts/modbus-rig).
 * Known register image → decoded values; writes checked through the slave's TCP side with mbpoll.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GatewayError } from '../../src/core/errors.js';
import { resolveDevices, validateConfig } from '../../src/config/load.js';
import { createModbusRtuDriver, createModbusRtuDriverWith } from '../../src/drivers/modbus-rtu.js';
import type { Driver } from '../../src/drivers/types.js';
import { watchLateness } from '../helpers/lateness.js';
import { hasPeer, needs, peerHook } from '../helpers/peers.js';
import { context, device, FakeSink, mbpollHolding, mbpollUnavailable, point, Rig, rigUnavailable, rtuBus, sleep, waitFor } from './modbus-rig.js';

const missing = rigUnavailable();
const rtuTest = needs(missing, 'modbus-rtu rig tests');

let rig: Rig | null = null;
test.before(peerHook(missing, async () => {
  rig = new Rig('1,2,5');
  await rig.start();
}));
test.after(async () => { await rig?.stop(); });

const TUNING = { health: { failuresToDegrade: 3, minBackoffMs: 800, maxBackoffMs: 3000 }, reopenMinMs: 100, reopenMaxMs: 800 };

async function withDriver(devices: ReturnType<typeof device>[], fn: (d: Driver, sink: FakeSink) => Promise<void>, busExtra: Record<string, unknown> = {}): Promise<void> {
  const sink = new FakeSink();
  const driver = createModbusRtuDriverWith(rtuBus(rig!.master, busExtra), devices, context(sink), TUNING);
  try {
    await driver.start();
    await fn(driver, sink);
  } finally {
    await driver.stop();
  }
}

type Stats = { bus: Record<string, unknown>; devices: Record<string, Record<string, unknown>> };
const statsOf = (d: Driver): Stats => d.stats!() as Stats;

const everyType = [
  point('s16', { table: 'holding', address: 0, data_type: 'int16' }),
  point('u16', { table: 'holding', address: 1, data_type: 'uint16' }),
  point('s32', { table: 'holding', address: 2, data_type: 'int32' }),
  point('u32le', { table: 'holding', address: 4, data_type: 'uint32', word_order: 'little' }),
  point('f32', { table: 'holding', address: 6, data_type: 'float32' }),
  point('f32le', { table: 'holding', address: 8, data_type: 'float32', word_order: 'little' }),
  point('f64', { table: 'holding', address: 10, data_type: 'float64' }),
  point('i64', { table: 'holding', address: 14, data_type: 'int64' }),
  point('name', { table: 'holding', address: 18, data_type: 'string', length: 4 }, 'R', 'string'),
  point('bit0', { table: 'holding', address: 22, data_type: 'uint16', bit: 0 }),
  point('bit1', { table: 'holding', address: 22, data_type: 'uint16', bit: 1 }),
  point('bit15', { table: 'holding', address: 22, data_type: 'uint16', bit: 15 }),
  point('u16bs', { table: 'holding', address: 23, data_type: 'uint16', byte_order: 'little' }),
  point('unit', { table: 'holding', address: 24, data_type: 'uint16' }),
  point('freq', { table: 'holding', address: 100, data_type: 'float32' }),
  point('volt', { table: 'input', address: 0, data_type: 'float32' }, 'R'),
  point('curr', { table: 'input', address: 6, data_type: 'float32' }, 'R'),
  point('coil0', { table: 'coil', address: 0, data_type: 'bool' }, 'RW', 'int'),
  point('coil1', { table: 'coil', address: 1, data_type: 'bool' }, 'RW', 'int'),
  point('coil3', { table: 'coil', address: 3, data_type: 'bool' }, 'RW', 'int'),
  point('di0', { table: 'discrete', address: 0, data_type: 'bool' }, 'R', 'int'),
  point('di1', { table: 'discrete', address: 1, data_type: 'bool' }, 'R', 'int'),
];

rtuTest('polling decodes every data type, word order, byte order and bit from the slave, in 5 planned reads', async () => {
  await withDriver([device('meter', 1, everyType, 150)], async (driver, sink) => {
    await waitFor('all points', () => Object.keys(sink.latest('meter')).length === everyType.length, 5000);
    const v = sink.latest('meter');
    assert.equal({ ...v, freq: undefined }, {
      s16: -1, u16: 50000, s32: -123456, u32le: 3000000000, f32: 230.5, f32le: 230.5, f64: -1234.5678, i64: 1234567890123,
      name: 'SG-RIG01', bit0: 1, bit1: 0, bit15: 1, u16bs: 0x1234, unit: 1, freq: undefined, volt: 231.5, curr: 5.25,
      coil0: 1, coil1: 0, coil3: 1, di0: 0, di1: 1,
    });
    assert.ok(Math.abs((v['freq'] as number) - 49.95) < 1e-5);
    const s = statsOf(driver);
    // holding 0..24 (one read), holding 100 (too far to bridge at 9600), input 0..7 (gap bridged), coils, discretes.
    assert.is(s.devices['meter']!['readsPerCycle'], 5);
    assert.ok((s.bus['lastRttMs'] as number) > 0);
    assert.is(sink.failuresOf('meter').length, 0);
  });
});

rtuTest('read() does a real read and resolves raw values without touching the sink', async () => {
  await withDriver([device('meter', 1, everyType, 60_000)], async (driver, sink) => {
    await waitFor('first poll', () => sink.dataOf('meter').length >= 1 /* one update per cycle (rule 9) */, 5000);
    const before = sink.events.length;
    const reqs = statsOf(driver).bus['requests'] as number;
    const got = await driver.read!('meter', ['f32', 'u32le', 'coil3']);
    assert.equal(got, { f32: 230.5, u32le: 3000000000, coil3: 1 });
    assert.is(sink.events.length, before);
    assert.is((statsOf(driver).bus['requests'] as number) - reqs, 2); // holding 4..7 merged, plus the coil
  });
});

const writable = [
  point('w16', { table: 'holding', address: 30, data_type: 'uint16' }),
  point('wf', { table: 'holding', address: 32, data_type: 'float32' }),
  point('wi', { table: 'holding', address: 34, data_type: 'int32', word_order: 'little' }),
  point('wbit', { table: 'holding', address: 40, data_type: 'uint16', bit: 3 }),
  point('wbit0', { table: 'holding', address: 40, data_type: 'uint16', bit: 0 }),
  point('c10', { table: 'coil', address: 10, data_type: 'bool' }, 'RW', 'int'),
  point('c11', { table: 'coil', address: 11, data_type: 'bool' }, 'RW', 'int'),
  point('c13', { table: 'coil', address: 13, data_type: 'bool' }, 'RW', 'int'),
];

rtuTest('writes: FC06 single, contiguous batch as one FC16 / FC15, bit read-modify-write; the slave holds them', async () => {
  await withDriver([device('io', 1, writable, 60_000)], async (driver, sink) => {
    await waitFor('first poll', () => sink.dataOf('io').length >= 1 /* one update per cycle (rule 9) */, 5000);
    const requests = (): number => statsOf(driver).bus['requests'] as number;
    let n = requests();
    await driver.write('io', [{ name: 'w16', value: 4242 }]);
    assert.is(requests() - n, 1);
    n = requests();
    await driver.write('io', [{ name: 'wf', value: 12.5 }, { name: 'wi', value: -7 }]);
    assert.is(requests() - n, 1, 'contiguous float32 + int32 go out as one FC16');
    n = requests();
    await driver.write('io', [{ name: 'c10', value: 1 }, { name: 'c11', value: 1 }, { name: 'c13', value: 1 }]);
    assert.is(requests() - n, 2, 'coils 10-11 as one FC15, coil 13 as FC05');
    await driver.write('io', [{ name: 'wbit', value: 1 }, { name: 'wbit0', value: 1 }]);
    const back = await driver.read!('io', writable.map((p) => p.name));
    assert.equal(back, { w16: 4242, wf: 12.5, wi: -7, wbit: 1, wbit0: 1, c10: 1, c11: 1, c13: 1 });
    if (hasPeer(mbpollUnavailable(), 'mbpoll cross-check')) {
      // Independent client on the slave's TCP side (same datastore): the registers really changed.
      assert.equal(mbpollHolding(rig!.tcpPort, 1, 30, 1), [4242]);
      assert.equal(mbpollHolding(rig!.tcpPort, 1, 32, 4), [0x4148, 0x0000, 0xfff9, 0xffff]);
      assert.equal(mbpollHolding(rig!.tcpPort, 1, 40, 1), [0b1001]);
    }
    await driver.write('io', [{ name: 'wbit', value: 0 }]);
    assert.equal(await driver.read!('io', ['wbit', 'wbit0']), { wbit: 0, wbit0: 1 });
  });
});

rtuTest('a value that does not fit is refused with INVALID_VALUE and nothing is sent', async () => {
  await withDriver([device('io', 1, writable, 60_000)], async (driver, sink) => {
    await waitFor('first poll', () => sink.dataOf('io').length >= 1 /* one update per cycle (rule 9) */, 5000);
    const n = statsOf(driver).bus['requests'];
    for (const bad of [{ name: 'w16', value: 70000 }, { name: 'wi', value: 1.5 }, { name: 'c10', value: 2 }]) {
      const err = await driver.write('io', [{ name: 'wf', value: 1 }, bad]).then(() => null, (e: unknown) => e);
      assert.instance(err, GatewayError);
      assert.is((err as GatewayError).code, 'INVALID_VALUE');
    }
    assert.is(statsOf(driver).bus['requests'], n);
  });
});

rtuTest('a modbus exception is a clear MODBUS_EXCEPTION error, on read() and to the sink', async () => {
  const pts = [point('ok', { table: 'holding', address: 6, data_type: 'float32' }), point('missing', { table: 'holding', address: 250, data_type: 'uint16' })];
  await withDriver([device('bad', 1, pts, 200)], async (driver, sink) => {
    const err = await driver.read!('bad', ['missing']).then(() => null, (e: unknown) => e);
    assert.instance(err, GatewayError);
    assert.is((err as GatewayError).code, 'MODBUS_EXCEPTION');
    assert.is((err as Error).message, 'modbus exception 2 (illegal data address) from unit 1');
    await waitFor('failure reported', () => sink.failuresOf('bad').length > 0, 3000);
    assert.match(sink.failuresOf('bad')[0]!.error!.message, /exception 2/);
    assert.is(sink.latest('bad')['ok'], 230.5, 'the good point keeps reading');
    assert.is(statsOf(driver).devices['bad']!['degraded'], false, 'an answering slave is not degraded');
  });
});

rtuTest('a device with holes in its map refuses a bridged read; the driver falls back to contiguous reads', async () => {
  const pts = ['a', 'b', 'c', 'd'].map((n, i) => point(n, { table: 'holding', address: [0, 2, 10, 12][i]!, data_type: 'float32' }));
  await withDriver([device('sparse', 5, pts, 100)], async (driver, sink) => {
    await waitFor('values after fallback', () => Object.keys(sink.latest('sparse')).length === 4, 4000);
    assert.equal(sink.latest('sparse'), { a: 1.5, b: 2.5, c: 3.5, d: 4.5 });
    assert.is(statsOf(driver).devices['sparse']!['readsPerCycle'], 2);
  });
});

rtuTest('a test read (probe) and a REST read of a device with holes step down as the poller does: every point read, none failed', async () => {
  const pts = ['a', 'b', 'c', 'd'].map((n, i) => point(n, { table: 'holding', address: [0, 2, 10, 12][i]!, data_type: 'float32' }));
  await withDriver([device('sparse', 5, pts, 3_600_000)], async (driver) => {
    const probed = await driver.probe!(device('sparse-new', 5, pts, 1000));
    assert.equal(probed.errors, {});
    assert.equal(probed.values, { a: 1.5, b: 2.5, c: 3.5, d: 4.5 });
    assert.equal(await driver.read!('sparse', ['a', 'd']), { a: 1.5, d: 4.5 });
  });
});

rtuTest('a silent unit is degraded while another unit on the bus keeps its poll rate; a dead slave that returns is polled again', async () => {
  const live = device('live', 1, [point('f32', { table: 'holding', address: 6, data_type: 'float32' })], 100);
  const ghost = device('ghost', 3, [point('f32', { table: 'holding', address: 6, data_type: 'float32' })], 100);
  const flaky = device('flaky', 2, [point('unit', { table: 'holding', address: 24, data_type: 'uint16' })], 100);
  await withDriver([live, ghost, flaky], async (driver, sink) => {
    await waitFor('ghost degraded', () => statsOf(driver).devices['ghost']!['degraded'] === true, 4000);
    assert.ok(sink.failuresOf('ghost').length >= 3);
    assert.match(sink.failuresOf('ghost')[0]!.error!.message, /timeout: unit 3 .* 150 ms/);
    assert.is((sink.failuresOf('ghost')[0]!.error as GatewayError).code, 'DRIVER_TIMEOUT');
    // The live unit's rate over 2 s while the ghost is degraded (probed every 0.8-3 s), per second the driver's
    // thread could run: a busy job beside the tests keeping it from a CPU is not the ghost's doing.
    const from = Date.now();
    const late = watchLateness();
    await sleep(2000);
    const rate = (sink.dataOf('live').filter((e) => e.at >= from).length * 1000) / late.ownMs;
    console.log(`live unit poll rate with a dead unit on the bus: ${rate.toFixed(1)}/s (nominal 10/s; ${late})`);
    assert.ok(rate >= 7, `live unit polled only ${rate.toFixed(1)}/s (${late})`);
    assert.is(sink.latest('flaky')['unit'], 2);

    rig!.toggleUnit2(); // unit 2 dies
    await waitFor('flaky degraded', () => statsOf(driver).devices['flaky']!['degraded'] === true, 4000);
    rig!.toggleUnit2(); // and comes back
    const back = Date.now();
    await waitFor('flaky answering again', () => sink.dataOf('flaky').some((e) => e.at > back), 6000);
    assert.is(statsOf(driver).devices['flaky']!['degraded'], false);
    assert.ok((statsOf(driver).devices['ghost']!['timeouts'] as number) >= 3);
  }, { timeout: 150 });
});

rtuTest('the pty vanishing and coming back is survived without a restart', async () => {
  const live = device('live', 1, [point('f32', { table: 'holding', address: 6, data_type: 'float32' })], 100);
  await withDriver([live], async (driver, sink) => {
    await waitFor('first data', () => sink.dataOf('live').length > 0, 4000);
    await rig!.unplug();
    const gone = Date.now();
    await waitFor('failures while unplugged', () => sink.failuresOf('live').some((e) => e.at > gone), 4000);
    await sleep(500);
    await rig!.replug();
    const back = Date.now();
    await waitFor('data after replug', () => sink.dataOf('live').some((e) => e.at > back), 8000);
    const s = statsOf(driver);
    assert.ok((s.bus['reopens'] as number) >= 1);
    assert.is(s.bus['open'], true);
  }, { timeout: 150 });
});

rtuTest('library models through the real config loader: an Eastron SDM120 reads, a Waveshare relay switches', async () => {
  const config = validateConfig({
    gateway: { id: 'gw' },
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig!.master, baud_rate: 9600 }],
    devices: [
      { id: 'meter-1', model: 'eastron-sdm120', bus: 'rs485', unit_id: 1, poll: '200ms' },
      { id: 'relays', model: 'waveshare-modbus-rtu-relay', bus: 'rs485', unit_id: 2, poll: '200ms' },
    ],
  }, { env: {} });
  const sink = new FakeSink();
  const driver = createModbusRtuDriver(config.buses[0]!, resolveDevices(config), context(sink));
  try {
    await driver.start();
    await waitFor('meter and relay values', () => Object.keys(sink.latest('meter-1')).length === 16 /* 13 measurements (phase_angle, which the SDM120 lacks, removed) + serial number, meter code, software version */ && Object.keys(sink.latest('relays')).length === 9, 5000);
    const m = sink.latest('meter-1');
    assert.equal([m['voltage'], m['current'], m['active_power'], m['frequency'], m['total_energy'], m['serial_number']], [231.5, 5.25, 1210, 50, 1234.5, 20000001]);
    assert.is(sink.latest('relays')['relay_1'], 1); // the slave starts with coils 0, 3, 6 on
    assert.is(sink.latest('relays')['software_version'], 100); // raw: the gateway applies scale 0.01
    await driver.write('relays', [{ name: 'relay_1', value: 0 }, { name: 'relay_2', value: 1 }]);
    assert.equal(await driver.read!('relays', ['relay_1', 'relay_2']), { relay_1: 0, relay_2: 1 });
    const s = driver.stats!() as { devices: Record<string, Record<string, unknown>> };
    // SDM120 at 9600: 0..31 (4-register gaps bridged), 70..79, 342..345 — a 38-register gap costs more than a
    // request — and the serial number at holding FC00h (its own 10-minute poll, still one of the device's reads).
    assert.is(s.devices['meter-1']!['readsPerCycle'], 4);
    assert.is(sink.failuresOf('meter-1').length + sink.failuresOf('relays').length, 0);
  } finally {
    await driver.stop();
  }
});

test.run();
