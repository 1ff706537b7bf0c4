/**
 * Rule 9 on the pymodbus rig (issue 11 item 7): a meter read in three requests per cycle (holding, input
 * and coil tables) lands as ONE shadow update per cycle — one dataChange with every point, one MQTT state
 * message — and a cycle with failed requests is one failure, not one per request.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createModbusRtuDriverWith } from '../../src/drivers/modbus-rtu.js';
import { collect, connectClient, endClient } from '../export/helpers.js';
import { watchLateness } from '../helpers/lateness.js';
import { needs } from '../helpers/peers.js';
import { rigConfig, withRigGateway } from '../helpers/rig-gateway.js';
import { context, device, FakeSink, freePort, point, Rig, rigUnavailable, rtuBus, sleep } from './modbus-rig.js';

const why = rigUnavailable();
const rigTest = needs(why, 'modbus cycle tests');

const points = [
  { name: 'f32', type: 'float', report: 'always', modbus: { table: 'holding', address: 6, data_type: 'float32' } },
  { name: 'volts', type: 'float', report: 'always', modbus: { table: 'input', address: 0, data_type: 'float32' } },
  { name: 'coil3', type: 'int', report: 'always', modbus: { table: 'coil', address: 3, data_type: 'bool' } },
];

rigTest('three requests per cycle: one dataChange with every point and one MQTT state per cycle', async () => {
  await withRigGateway('1', async (rig, dir) => rigConfig(dir, rig, {
    mqtt: { host: '127.0.0.1', port: await freePort(), ws_port: await freePort() },
    models: { m: { points } },
    devices: [{ id: 'meter', model: 'm', bus: 'rs485', unit_id: 1, poll: '250ms' }],
  }), async (g) => {
    const events: string[][] = [];
    g.shadow.bus.on(events, 'dataChange', (e) => e.id === 'meter' && events.push(e.values.map((v) => v.name).sort()));
    const sub = await connectClient(`mqtt://127.0.0.1:${g.mqttPort}`);
    const states = await collect(sub, 'shadowgate/meter');
    try {
      await sleep(300);
      const t0 = events.length;
      const m0 = states.length;
      const late = watchLateness();
      await sleep(2000);
      const requests = ((g.drivers.get('rs485')!.stats!() as { devices: Record<string, { readsPerCycle: number }> }).devices['meter']!.readsPerCycle);
      assert.is(requests, 3, 'the plan reads three tables');
      const cycles = events.length - t0;
      // The floor over the time the gateway's thread could run (a busy job beside the tests takes some of it).
      assert.ok(cycles >= Math.min(4, Math.floor(late.ownMs / 500)) && cycles <= 10, `${cycles} updates in 2 s at 250 ms (${late})`);
      for (const names of events.slice(t0)) assert.equal(names, ['coil3', 'f32', 'volts'], 'every update holds the whole cycle');
      const messages = states.length - m0;
      assert.ok(Math.abs(messages - cycles) <= 1, `${messages} MQTT state messages for ${cycles} cycles`);
    } finally {
      g.shadow.bus.off(events);
      await endClient(sub);
    }
  });
});

rigTest('a dead unit read in three requests: one failure per cycle', async () => {
  const rig = new Rig('1');
  const sink = new FakeSink();
  try {
    await rig.start();
    const model = points.map((p) => point(p.name, p.modbus as never, 'R', p.type as 'float'));
    const driver = createModbusRtuDriverWith(rtuBus(rig.master, { timeout: 60, retries: 0 }), [device('ghost', 9, model, 300)], context(sink),
      { health: { failuresToDegrade: 1000 } }); // never degraded: every cycle tries all three requests
    await driver.start();
    await sleep(1500);
    await driver.stop();
    const failures = sink.failuresOf('ghost').length;
    const requests = (driver.stats!() as { devices: Record<string, { requests: number }> }).devices['ghost']!.requests;
    assert.ok(failures >= 2, `${failures} failures`);
    assert.ok(requests >= failures * 3 - 2, `${requests} requests for ${failures} cycle failures (3 per cycle)`);
  } finally {
    await rig.stop();
  }
});

test.run();
