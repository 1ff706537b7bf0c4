/**
 * SunSpec on the pymodbus rig, across a reconnect: an inverter serving the integer models (1 + 103) is
 * unplugged and comes back serving the float models (1 of 65 registers + 113), as a Fronius does after its
 * "float" setting or a firmware update. The gateway walks the chain again when the link re-opens and reads
 * the floats at their new addresses; no value read at the old addresses is ever published. The register
 * images are scripts/modbus-rig/device_images.py's (written from the SunSpec model files, not from our model).
 */
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { call } from '../helpers/http.js';
import { describeImages, deviceRigConfig, startDeviceGateway, type DeviceGateway } from '../helpers/device-rig.js';
import { needs } from '../helpers/peers.js';
import { rigUnavailable } from './modbus-rig.js';

const why = rigUnavailable();
interface RestPoint { name: string; value: number | string | null; reason?: string }

const expected = (key: string): Map<string, number | string | string[] | null> =>
  new Map(describeImages(`${key}:1`)[0]!.points.map((p) => [p.name, p.value]));

const reconnect = suite('SunSpec chain across a reconnect');
const rigTest = needs(why, 'SunSpec rig tests', reconnect);

rigTest('103 → unplugged → back with 1 (L 65) + 113: re-walked on reconnect, floats read right, nothing read at old addresses published', async () => {
  const before = expected('sunspec-103');
  const after = expected('sunspec-113');
  let run: DeviceGateway | undefined;
  try {
    run = await startDeviceGateway('sunspec-103:1', (r, dir) => deviceRigConfig(dir, r, {
      buses: [{ id: 'rs485', driver: 'modbus-rtu', port: r.master, baud_rate: 9600, timeout: '300ms' }],
      devices: [{ id: 'inv', model: 'sunspec-inverter', bus: 'rs485', unit_id: 1, poll: '500ms' }],
    }));
    const gw = run.gw;
    // Every value the shadow ever takes for these points, in order.
    const seen: { name: string; value: unknown }[] = [];
    gw.shadow.bus.on(seen, 'dataChange', (e) => {
      if (e.id === 'inv') for (const c of e.values) seen.push({ name: c.name, value: c.value });
    });
    const points = async (): Promise<Map<string, RestPoint>> => {
      const r = await call<{ points: RestPoint[] }>(gw.httpPort, '/api/v1/shadow/device?id=inv');
      return new Map(r.body.data.points.map((p) => [p.name, p]));
    };
    let now = new Map<string, RestPoint>();
    const shows = (name: string, value: unknown): boolean => now.get(name)?.value === value;
    const poll = async (): Promise<void> => { now = await points(); };
    const deadline = (ms: number) => Date.now() + ms;

    let end = deadline(20_000);
    while (!(shows('ac_power', before.get('ac_power')) && shows('model', before.get('model')))) {
      if (Date.now() > end) assert.unreachable(`the 103 inverter never showed its values: ${JSON.stringify([...now.values()].slice(0, 8))}`);
      await poll();
      await new Promise((r) => setTimeout(r, 100));
    }
    assert.is(now.get('w_sf')?.value, 1);

    await run.rig.swap('sunspec-113:1');
    end = deadline(30_000);
    while (!(shows('ac_power', after.get('ac_power')) && shows('model', after.get('model')) && shows('frequency', after.get('frequency')))) {
      if (Date.now() > end) assert.unreachable(`after the reconnect the 113 values never showed: ${JSON.stringify(['ac_power', 'frequency', 'model', 'w_sf'].map((n) => now.get(n)))}`);
      await poll();
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const name of ['ac_power', 'voltage_an', 'frequency', 'energy', 'cabinet_temperature', 'power_factor']) {
      const want = after.get(name) as number;
      const got = now.get(name)?.value as number;
      assert.ok(Math.abs(got - want) <= Math.max(1e-3, Math.abs(want) * 2e-7), `${name}: ${got}, expected ${want}`);
    }
    assert.is(now.get('w_sf')?.value, 0, 'the float model has no scale factor: 10^0');
    assert.is(now.get('operating_state')?.value, 'mppt');
    assert.is(now.get('event_grid_disconnect')?.value, 1);

    // The walk after the reconnect: the slave saw "SunS" read again and the new chain walked.
    const walks = run.rig.events.filter((e) => e.kind === 'REQ' && e.fc === 3 && e.address === 40000 && e.count === 2);
    assert.ok(walks.length >= 2, `"SunS" read ${walks.length} time(s)`);

    // Nothing in between: every value ac_power / frequency ever took is the 103 image's, the 113 image's or null.
    for (const name of ['ac_power', 'frequency', 'voltage_an']) {
      const allowed = [before.get(name), after.get(name), null];
      const odd = seen.filter((c) => c.name === name && !allowed.some((a) => typeof a === 'number' && typeof c.value === 'number' ? Math.abs(a - c.value) <= Math.abs(a) * 1e-6 : a === c.value));
      assert.equal(odd, [], `${name} took values from neither chain: ${JSON.stringify(odd.slice(0, 5))}`);
    }
  } finally {
    await run?.stop();
  }
});

reconnect.run();
