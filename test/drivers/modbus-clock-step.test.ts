/**
 * Rule 11 on the pymodbus rig: polling is scheduled on the monotonic clock, so a backward wall-clock step
 * of 60 s (NTP correcting the clock) stops no poll, and a forward one of 30 days does not rush any.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Clock } from '../../src/core/clock.js';
import { createModbusRtuDriverWith } from '../../src/drivers/modbus-rtu.js';
import { silentLogger } from '../../src/util/logger.js';
import { device, FakeSink, point, Rig, rigUnavailable, rtuBus, sleep } from './modbus-rig.js';

const why = rigUnavailable();
if (why) console.log(`SKIP: modbus clock-step test: ${why}`);

test('a wall-clock step backward (60 s) or forward (30 days) changes the poll rate not at all', async () => {
  if (why) return;
  const rig = new Rig('1');
  const sink = new FakeSink();
  let offset = 0;
  const clock: Clock = { now: () => Date.now() + offset, mono: () => performance.now() };
  try {
    await rig.start();
    const driver = createModbusRtuDriverWith(rtuBus(rig.master),
      [device('m', 1, [point('f32', { table: 'holding', address: 6, data_type: 'float32' }, 'R')], 200)],
      { sink, clock, log: silentLogger, lastValue: () => null, lastWrite: () => null });
    await driver.start();
    try {
      await sleep(1000);
      const before = sink.dataOf('m').length;
      offset = -60_000;
      await sleep(1000);
      const afterBack = sink.dataOf('m').length - before;
      offset = 30 * 86_400_000;
      await sleep(1000);
      const afterForward = sink.dataOf('m').length - before - afterBack;
      console.log(`  polls per second: ${before} before, ${afterBack} after -60 s, ${afterForward} after +30 d (every 200 ms)`);
      assert.ok(before >= 3, `${before} polls before`);
      assert.ok(afterBack >= 3, `${afterBack} polls in the second after a backward step`);
      assert.ok(afterForward >= 3 && afterForward <= 7, `${afterForward} polls in the second after a forward step`);
    } finally {
      await driver.stop();
    }
  } finally {
    await rig.stop();
  }
});

test.run();
