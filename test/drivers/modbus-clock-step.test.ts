/**
 * Rule 11 on the pymodbus rig: polling is scheduled on the monotonic clock, so a backward wall-clock step
 * of 60 s (NTP correcting the clock) stops no poll, and a forward one of 30 days does not rush any.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Clock } from '../../src/core/clock.js';
import { createModbusRtuDriverWith } from '../../src/drivers/modbus-rtu.js';
import { silentLogger } from '../../src/util/logger.js';
import { watchLateness, type Lateness } from '../helpers/lateness.js';
import { needs } from '../helpers/peers.js';
import { device, FakeSink, point, Rig, rigUnavailable, rtuBus, sleep } from './modbus-rig.js';

const why = rigUnavailable();
const rigTest = needs(why, 'modbus clock-step test');

rigTest('a wall-clock step backward (60 s) or forward (30 days) changes the poll rate not at all', async () => {
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
      // Each second's floor is 3 of its 5 polls over the time the driver's thread could run in it: a busy job
      // beside the tests takes some, a clock step none.
      const second = async (): Promise<Lateness> => {
        const late = watchLateness();
        await sleep(1000);
        return late;
      };
      const floor = (late: Lateness): number => Math.min(3, Math.floor(late.ownMs / 300));
      const l0 = await second();
      const before = sink.dataOf('m').length;
      offset = -60_000;
      const l1 = await second();
      const afterBack = sink.dataOf('m').length - before;
      offset = 30 * 86_400_000;
      const l2 = await second();
      const afterForward = sink.dataOf('m').length - before - afterBack;
      console.log(`  polls per second: ${before} before, ${afterBack} after -60 s, ${afterForward} after +30 d (every 200 ms)`);
      assert.ok(before >= floor(l0), `${before} polls before (${l0})`);
      assert.ok(afterBack >= floor(l1), `${afterBack} polls in the second after a backward step (${l1})`);
      assert.ok(afterForward >= floor(l2) && afterForward <= 7, `${afterForward} polls in the second after a forward step (${l2})`);
    } finally {
      await driver.stop();
    }
  } finally {
    await rig.stop();
  }
});

test.run();
