/**
 * A saturated line on the pymodbus rig at 9600 baud (through the baud-emulating relay): a meter read in
 * three requests per cycle and two sensors read in one, all due every 50 ms — several times what the
 * line serves. Each device's cycle should stretch alike: the meter's period no longer three times the
 * sensors'. (The precise figure against the replay floor is the bench's: scripts/bench/modbus-saturated.ts.)
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createModbusRtuDriverWith } from '../../src/drivers/modbus-rtu.js';
import { needs } from '../helpers/peers.js';
import { context, device, FakeSink, point, rigUnavailable, rtuBus, sleep } from './modbus-rig.js';
import { RelayRig } from './modbus-relay-rig.js';

const why = rigUnavailable();
const rigTest = needs(why, 'saturated bus test');

const meter = [
  point('f32', { table: 'holding', address: 6, data_type: 'float32' }, 'R'),
  point('volts', { table: 'input', address: 0, data_type: 'float32' }, 'R'),
  point('coil3', { table: 'coil', address: 3, data_type: 'bool' }, 'R', 'int'),
];
const sensor = [point('t', { table: 'holding', address: 0, data_type: 'uint16' }, 'R', 'int')];

rigTest('polled faster than 9600 baud serves: a 3-request meter and 1-request sensors stretch alike', async () => {
  const rig = new RelayRig('1,2,3');
  const sink = new FakeSink();
  let driver: ReturnType<typeof createModbusRtuDriverWith> | undefined;
  try {
    await rig.start();
    const devices = [device('meter', 1, meter, 50), device('s2', 2, sensor, 50), device('s3', 3, sensor, 50)];
    driver = createModbusRtuDriverWith(rtuBus(rig.master, { timeout: 1000 }), devices, context(sink));
    await driver.start();
    const stats = driver.stats!() as { devices: Record<string, { readsPerCycle: number }> };
    assert.is(stats.devices['meter']!.readsPerCycle, 3, 'the meter takes three requests a cycle');
    assert.is(stats.devices['s2']!.readsPerCycle, 1);
    await sleep(1500);
    const from = Date.now();
    await sleep(6000);
    const to = Date.now();
    const periods = devices.map((d) => (to - from) / sink.dataOf(d.config.id).filter((e) => e.at >= from && e.at < to).length);
    const [m, s2, s3] = periods as [number, number, number];
    const spread = Math.max(...periods) / Math.min(...periods);
    console.log(`  cycle periods: meter ${m.toFixed(0)} ms, sensors ${s2.toFixed(0)} / ${s3.toFixed(0)} ms (configured 50 ms); worst/best ${spread.toFixed(2)}`);
    assert.ok(Math.min(...periods) > 100, 'the line is saturated: every device is slower than configured');
    assert.ok(spread <= 1.5, `every device stretched alike: worst/best ${spread.toFixed(2)}`);
    assert.is(devices.map((d) => sink.failuresOf(d.config.id).length).reduce((a, b) => a + b, 0), 0, 'no failed cycle');
  } finally {
    await driver?.stop();
    await rig.stop();
  }
});

test.run();
