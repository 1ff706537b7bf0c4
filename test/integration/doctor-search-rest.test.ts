/**
 * The bus doctor's settings search on a running gateway: an RTU bus configured at 9600 8N1 on a line that runs at
 * 19200 8O1 (scripts/modbus-rig/line_relay.py) with an Eastron SDM630 at unit 1 (scripts/modbus-rig/devices.py).
 * `POST /api/v1/buses/rs485/doctor` with `baud: "auto"` takes the line from the bus (stopped meanwhile, as
 * /buses says), finds 19200 odd and the meter, and gives the line back: the bus runs again at its own settings.
 * On a Modbus TCP bus "auto" is a 400 naming the field.
 */
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { DoctorReport } from '../../src/protocol/modbus/doctor-types.js';
import type { Driver } from '../../src/drivers/types.js';
import { rigUnavailable } from '../drivers/modbus-rig.js';
import { call, waitFor } from '../helpers/http.js';
import { needs, peerHook } from '../helpers/peers.js';
import { startRelayGateway, type RelayGateway } from '../helpers/relay-line.js';

const why = rigUnavailable();
const rigTest = needs(why, 'bus doctor settings search rig tests');

interface Job { id: string; state: 'running' | 'done' | 'failed'; takes_line: boolean; options: Record<string, unknown>; report: DoctorReport | null; error: string | null }
interface BusEntry { id: string; running: boolean; error: string | null; baud_rate?: number }

let g: RelayGateway | undefined;

test.before(peerHook(why, async () => {
  g = await startRelayGateway('19200,8,O,1', 'sdm630:1', (port, dir) => ({
    gateway: { id: 'doctor-search', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    // Port 1 on loopback: nobody listens; the bus exists, which is all a refused body needs.
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port, baud_rate: 9600, parity: 'none', stop_bits: 1 }, { id: 'plc', driver: 'modbus-tcp', host: '127.0.0.1', port: 1 }],
  }));
}));
test.after(async () => {
  await g?.stop();
});

const post = (bus: string, body: unknown): Promise<{ status: number; body: { success: boolean; errorMsg: string; data: Job } }> =>
  call<Job>(g!.gw.httpPort, `/api/v1/buses/${bus}/doctor`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
const rs485 = async (): Promise<BusEntry> => (await call<BusEntry[]>(g!.gw.httpPort, '/api/v1/buses')).body.data.find((b) => b.id === 'rs485')!;

rigTest('baud "auto" on a bus at the wrong settings: 19200 odd and the SDM630 at unit 1 found, the bus running again afterwards', async () => {
  const before: Driver | undefined = g!.gw.drivers.get('rs485');
  assert.ok(before, 'the bus runs before');
  const started = await post('rs485', { baud: 'auto', to: 3 });
  assert.is(started.status, 202, JSON.stringify(started.body));
  assert.is(started.body.data.takes_line, true);
  assert.equal([started.body.data.options['baud'], started.body.data.options['parity']], ['auto', 'auto']);
  // One run per bus, a search too.
  assert.is((await post('rs485', {})).status, 409);

  let sawStopped = false;
  const done = await waitFor(async () => {
    const job = (await call<Job>(g!.gw.httpPort, '/api/v1/buses/rs485/doctor')).body.data;
    if (job.state === 'running') {
      const bus = await rs485();
      if (!bus.running && /bus doctor/.test(bus.error ?? '')) sawStopped = true;
    }
    return job.state !== 'running' && job;
  }, 90_000, 'the search');
  assert.is(done.state, 'done', done.error ?? '');
  assert.ok(sawStopped, '/buses shows the bus stopped while the doctor has its line');
  const report = done.report!;
  assert.equal(report.line && [report.line.baud_rate, report.line.parity, report.line.stop_bits], [19200, 'odd', 1], JSON.stringify(report.line));
  assert.equal(report.units.map((u) => [u.unit, u.candidates[0]?.model]), [[1, 'eastron-sdm630']], JSON.stringify(report.units, null, 1));

  // The line is the bus's again, at its configured settings: a new driver, running, no error.
  await waitFor(async () => (await rs485()).running, 10_000, 'the bus running again');
  const after = await rs485();
  assert.equal([after.running, after.error, after.baud_rate], [true, null, 9600]);
  assert.ok(g!.gw.drivers.get('rs485') && g!.gw.drivers.get('rs485') !== before, 'a driver started anew');
  console.log(`  search: ${(report.elapsed_ms / 1000).toFixed(1)} s, ${report.sent_bytes} bytes sent`);
});

rigTest('"auto" on a Modbus TCP bus: 400 naming the field, nothing starts', async () => {
  for (const field of ['baud', 'parity', 'stop_bits']) {
    const r = await post('plc', { [field]: 'auto' });
    assert.equal([r.status, r.body.errorMsg], [400, `${field}: bus plc is Modbus TCP, which has no serial settings`]);
  }
  assert.is((await call<Job | null>(g!.gw.httpPort, '/api/v1/buses/plc/doctor')).body.data, null);
});

test.run();
