/**
 * Issue 11 item 1 on the pymodbus rig, over REST and MQTT: a value the point cannot hold is refused before
 * anything is stored or sent, naming the point and the range; three such typos leave the device Online,
 * its availability `online` and its write value untouched. A Modbus exception to a write is an answer from
 * a live device: refused, but no failure toward offline (DESIGN §3 rule 10).
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hashPassword } from '../../src/export/auth.js';
import { freePort, rigUnavailable } from '../drivers/modbus-rig.js';
import { collect, connectClient, endClient, withTimeout } from '../export/helpers.js';
import { call, waitFor } from '../helpers/http.js';
import { needs } from '../helpers/peers.js';
import { rigConfig, withRigGateway } from '../helpers/rig-gateway.js';

const why = rigUnavailable();
const rigTest = needs(why, 'bad-write tests');

rigTest('typos (70000 into an int16) are refused before storing or sending; the device stays online everywhere', async () => {
  await withRigGateway('1', async (rig, dir) => rigConfig(dir, rig, {
    mqtt: { host: '127.0.0.1', port: await freePort(), ws_port: await freePort(), allow_anonymous: true,
      users: [{ username: 'w', password_hash: await hashPassword('w-pass'), can_write: true }] },
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig.master, timeout: '200ms' }],
    models: { box: { points: [
      { name: 'setpoint', type: 'int', access: 'RW', modbus: { table: 'holding', address: 0, data_type: 'int16' } },
      { name: 'ghost', type: 'int', access: 'W', modbus: { table: 'holding', address: 300, data_type: 'uint16' } },
    ] } },
    devices: [{ id: 'd1', model: 'box', bus: 'rs485', unit_id: 1, poll: '200ms' }],
  }), async (g) => {
    await waitFor(() => g.shadow.GetDeviceState('d1') === 'Online', 5000, 'd1 online');
    const sub = await connectClient(`mqtt://127.0.0.1:${g.mqttPort}`);
    const seen = await collect(sub, 'shadowgate/d1/availability');
    const writer = await connectClient(`mqtt://127.0.0.1:${g.mqttPort}`, { username: 'w', password: 'w-pass' });
    const results = await collect(writer, 'shadowgate/d1/set/result');
    try {
      for (let i = 0; i < 3; i++) {
        const r = await call(g.httpPort, '/api/v1/device/writePoint?id=d1&point=setpoint&value=70000');
        assert.is(r.body.success, false);
        assert.match(r.body.errorMsg, /70000 does not fit int16 \(-32768\.\.32767\) for point setpoint/);
        await withTimeout(writer.publishAsync('shadowgate/d1/set', '{"setpoint":-40000}', { qos: 1 }), 3000, 'set');
      }
      await waitFor(() => results.length >= 3, 3000, 'three set results');
      for (const m of results) assert.match(m.payload, /does not fit int16/);
      assert.is(g.shadow.GetWritePointValue('d1', 'setpoint'), null, 'nothing stored');
      // A Modbus exception to a write (unit 1 has no register 300): an answer, not a failure.
      const ex = await call(g.httpPort, '/api/v1/device/writePoint?id=d1&point=ghost&value=1');
      assert.is(ex.body.success, false);
      assert.match(ex.body.errorMsg, /exception 2/i);
      await new Promise((r) => setTimeout(r, 500));
      const device = g.shadow.GetDeviceRecord('d1')!;
      assert.is(g.shadow.GetDeviceState('d1'), 'Online');
      assert.is(device.disconnectTimes, 0, 'no failure counted');
      assert.ok(seen.length >= 1 && seen.every((m) => m.payload === 'online'), JSON.stringify(seen.map((m) => m.payload)));
      // A good value still goes through and is read back.
      const ok = await call(g.httpPort, '/api/v1/device/writePoint?id=d1&point=setpoint&value=-123');
      assert.ok(ok.body.success, ok.body.errorMsg);
      assert.is(g.shadow.GetDevicePoint('d1', 'setpoint'), -123);
    } finally {
      await endClient(sub);
      await endClient(writer);
    }
  });
});

test.run();
