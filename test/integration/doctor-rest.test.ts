/**
 * The bus doctor through a running gateway: an RTU line on a pty with three real device images (an Eastron
 * SDM630, an XY-MD02, a Waveshare relay; scripts/modbus-rig/devices.py) while the gateway polls the XY-MD02.
 * `POST /api/v1/buses/rs485/doctor` finds the three units, each with its model, and the polled device keeps
 * at least 90% of its request rate meanwhile (bus stats: the doctor's requests are scan probes, not requests).
 * A second POST while it runs is 409; a bad body 400. The same units over Modbus TCP.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { DoctorReport } from '../../src/protocol/modbus/doctor-types.js';
import { rigUnavailable } from '../drivers/modbus-rig.js';
import { deviceRigConfig, startDeviceGateway, type DeviceGateway } from '../helpers/device-rig.js';
import { call, waitFor } from '../helpers/http.js';
import { needs, peerHook } from '../helpers/peers.js';

const why = rigUnavailable();
const rigTest = needs(why, 'bus doctor REST rig tests');

interface Job { id: string; state: 'running' | 'done' | 'failed'; progress: unknown; report: DoctorReport | null; error: string | null }

let g: DeviceGateway | undefined;

test.before(peerHook(why, async () => {
  g = await startDeviceGateway('sdm630:1,xy-md02:2,ws-relay:3', (rig, dir) => deviceRigConfig(dir, rig, {
    // The same devices over Modbus TCP (devices.py serves both): the doctor runs there too, with no serial settings.
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig.master, baud_rate: 9600 }, { id: 'plc', driver: 'modbus-tcp', host: '127.0.0.1', port: rig.tcpPort }],
    devices: [{ id: 'climate', model: 'xy-md02', bus: 'rs485', unit_id: 2, poll: '200ms' }],
  }));
}));
test.after(async () => {
  await g?.stop();
});

const busStats = (): { requests: number; scanProbes: number; timeouts: number } =>
  (g!.gw.drivers.get('rs485')!.stats!() as { bus: { requests: number; scanProbes: number; timeouts: number } }).bus;

/** Requests per second the gateway's polls make over `ms`. */
async function pollRate(ms: number): Promise<number> {
  const before = busStats().requests;
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, ms));
  return ((busStats().requests - before) * 1000) / (performance.now() - t0);
}

const post = (body: unknown): Promise<{ status: number; body: { success: boolean; errorCode: number; errorMsg: string; data: Job } }> =>
  call<Job>(g!.gw.httpPort, '/api/v1/buses/rs485/doctor', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

rigTest('the doctor finds the three units with their models while the polled device keeps >= 90% of its rate', async () => {
  // Polling settled first (the first cycles plan and place the device).
  await waitFor(() => busStats().requests >= 10, 10_000, 'the first polls');
  const before = await pollRate(4000);
  assert.ok(before > 2, `the device is polled (${before.toFixed(1)} requests/s)`);

  const probesBefore = busStats().scanProbes;
  const timeoutsBefore = busStats().timeouts;
  const reqBefore = busStats().requests;
  const t0 = performance.now();
  const started = await post({ from: 1, to: 16 });
  assert.is(started.status, 202, JSON.stringify(started.body));
  assert.is(started.body.data.state, 'running');

  // One run per bus: a second POST meanwhile is refused, naming the run under way.
  const again = await post({});
  assert.is(again.status, 409, JSON.stringify(again.body));
  assert.equal([again.body.success, again.body.errorCode], [false, 409]);
  assert.ok(again.body.errorMsg.includes(started.body.data.id), again.body.errorMsg);

  let sawProgress = false;
  const done = await waitFor(async () => {
    const job = (await call<Job>(g!.gw.httpPort, '/api/v1/buses/rs485/doctor')).body.data;
    if (job.state === 'running' && job.progress) sawProgress = true;
    return job.state !== 'running' && job;
  }, 90_000, 'the doctor run');
  const during = ((busStats().requests - reqBefore) * 1000) / (performance.now() - t0);
  const seconds = (performance.now() - t0) / 1000;
  assert.is(done.state, 'done', done.error ?? '');
  assert.ok(sawProgress, 'progress was shown while it ran');
  const report = done.report!;
  assert.equal(report.units.map((u) => u.unit), [1, 2, 3], JSON.stringify(report.units));
  const best = Object.fromEntries(report.units.map((u) => [u.unit, u.candidates[0]?.model]));
  assert.equal(best, { 1: 'eastron-sdm630', 2: 'xy-md02', 3: 'waveshare-modbus-rtu-relay' }, JSON.stringify(report.units, null, 1));
  assert.equal(report.line && [report.line.baud_rate, report.line.parity, report.line.stop_bits], [9600, 'none', 1]);
  assert.ok(report.sent_bytes > 0);

  // The polls kept their share: at least 90% of their rate before, over the doctor's whole run.
  assert.ok(during >= 0.9 * before, `polls ${during.toFixed(2)}/s during the doctor (${seconds.toFixed(1)} s) vs ${before.toFixed(2)}/s before`);
  // Its requests are scan probes: the silent ids are no timeouts of the bus.
  assert.ok(busStats().scanProbes - probesBefore >= 16, `${busStats().scanProbes - probesBefore} scan probes`);
  assert.is(busStats().timeouts - timeoutsBefore, 0, 'no bus timeouts from the doctor');
  console.log(`  doctor: ${seconds.toFixed(1)} s, polls ${before.toFixed(2)}/s before, ${during.toFixed(2)}/s during`);
});

rigTest('a bad body is 400 naming the field, and no run starts', async () => {
  const r = await post({ from: 0 });
  assert.is(r.status, 400);
  assert.match(r.body.errorMsg, /^from must be an integer from 1 to 247/);
  const unknown = await post({ units: [1] });
  assert.is(unknown.status, 400);
  assert.match(unknown.body.errorMsg, /^unknown field: units/);
});

rigTest('on a Modbus TCP bus the doctor finds the same units (raw exchanges by transaction id), with no serial line', async () => {
  const started = await call<Job>(g!.gw.httpPort, '/api/v1/buses/plc/doctor', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"to":5}' });
  assert.is(started.status, 202, JSON.stringify(started.body));
  const done = await waitFor(async () => {
    const job = (await call<Job>(g!.gw.httpPort, '/api/v1/buses/plc/doctor')).body.data;
    return job.state !== 'running' && job;
  }, 60_000, 'the doctor run on TCP');
  assert.is(done.state, 'done', done.error ?? '');
  assert.equal(done.report!.units.map((u) => [u.unit, u.candidates[0]?.model]), [[1, 'eastron-sdm630'], [2, 'xy-md02'], [3, 'waveshare-modbus-rtu-relay']]);
  assert.is(done.report!.line, null);
});

test.run();
