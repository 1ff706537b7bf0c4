/** modbus-tcp against the independent pymodbus TCP slave on a free port; reconnect after it restarts. */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GatewayError } from '../../src/core/errors.js';
import { createModbusTcpDriverWith } from '../../src/drivers/modbus-tcp.js';
import type { Driver } from '../../src/drivers/types.js';
import { needs, peerHook } from '../helpers/peers.js';
import { context, device, FakeSink, point, Rig, rigUnavailable, sleep, waitFor } from './modbus-rig.js';

const missing = rigUnavailable();
const tcpTest = needs(missing, 'modbus-tcp rig tests');

let rig: Rig | null = null;
test.before(peerHook(missing, async () => {
  rig = new Rig('1,2', false);
  await rig.start();
}));
test.after(async () => { await rig?.stop(); });

const points = [
  point('f32', { table: 'holding', address: 6, data_type: 'float32' }),
  point('f32le', { table: 'holding', address: 8, data_type: 'float32', word_order: 'little' }),
  point('name', { table: 'holding', address: 18, data_type: 'string', length: 4 }, 'R', 'string'),
  point('freq', { table: 'holding', address: 100, data_type: 'float32' }),
  point('w', { table: 'holding', address: 50, data_type: 'int32' }),
  point('c5', { table: 'coil', address: 5, data_type: 'bool' }, 'RW', 'int'),
];

async function withDriver(fn: (d: Driver, sink: FakeSink) => Promise<void>): Promise<void> {
  const sink = new FakeSink();
  const bus = { id: 'plc', driver: 'modbus-tcp' as const, host: '127.0.0.1', port: rig!.tcpPort, timeout: 300, retries: 1, max_registers: 125, max_gap: 'auto' };
  const driver = createModbusTcpDriverWith(bus, [device('plc1', 1, points, 100)], context(sink), { reopenMinMs: 100, reopenMaxMs: 500, health: { minBackoffMs: 300, maxBackoffMs: 600 } });
  try {
    await driver.start();
    await fn(driver, sink);
  } finally {
    await driver.stop();
  }
}

tcpTest('polls over TCP with one bridged read for the holding table', async () => {
  await withDriver(async (driver, sink) => {
    await waitFor('values', () => Object.keys(sink.latest('plc1')).length === points.length, 4000);
    const v = sink.latest('plc1');
    assert.is(v['f32'], 230.5);
    assert.is(v['f32le'], 230.5);
    assert.is(v['name'], 'SG-RIG01');
    assert.is(v['c5'], 0);
    // Over TCP bytes are nearly free: holding 6..101 is one request, the coil another.
    const s = driver.stats!() as { devices: Record<string, Record<string, unknown>> };
    assert.is(s.devices['plc1']!['readsPerCycle'], 2);
  });
});

tcpTest('writes and reads back over TCP; exceptions are clear', async () => {
  await withDriver(async (driver) => {
    await driver.write('plc1', [{ name: 'w', value: -99999 }, { name: 'c5', value: 1 }]);
    assert.equal(await driver.read!('plc1', ['w', 'c5']), { w: -99999, c5: 1 });
    await driver.write('plc1', [{ name: 'c5', value: 0 }]);
    const err = await driver.write('plc1', [{ name: 'name', value: 'x' }]).then(() => null, (e: unknown) => e);
    assert.ok(err === null, 'string write to a holding string is allowed');
    const bad = createModbusTcpDriverWith({ id: 'x', driver: 'modbus-tcp', host: '127.0.0.1', port: rig!.tcpPort, timeout: 1000, retries: 1, max_registers: 125, max_gap: 'auto' }, [device('d', 1, [point('p', { table: 'holding', address: 300, data_type: 'uint16' })], 60_000)], context(new FakeSink()));
    try {
      await bad.start();
      const e = await bad.read!('d', ['p']).then(() => null, (x: unknown) => x);
      assert.instance(e, GatewayError);
      assert.is((e as Error).message, 'modbus exception 2 (illegal data address) from unit 1');
    } finally {
      await bad.stop();
    }
    await driver.write('plc1', [{ name: 'name', value: 'SG-RIG01' }]);
  });
});

tcpTest('reconnects by itself when the server goes away and comes back', async () => {
  await withDriver(async (driver, sink) => {
    await waitFor('first data', () => sink.dataOf('plc1').length > 0, 4000);
    await rig!.unplug();
    const gone = Date.now();
    await waitFor('failures while down', () => sink.failuresOf('plc1').some((e) => e.at > gone), 4000);
    await sleep(300);
    await rig!.replug();
    const back = Date.now();
    await waitFor('data after restart', () => sink.dataOf('plc1').some((e) => e.at > back), 8000);
    assert.ok(((driver.stats!() as { bus: Record<string, number> }).bus['reopens'] ?? 0) >= 1);
  });
});

test.run();
