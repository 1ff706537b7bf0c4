/**
 * Listening through a running gateway: `POST /api/v1/buses/rs485/doctor` with `listen` takes the line from the
 * bus (its own polls would be all it hears), listens without sending while another master (pymodbus, master.py)
 * polls a meter on the same line (scripts/modbus-rig/line_relay.py: every end hears every other), reports that
 * master's traffic, and gives the line back: the bus runs again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { DoctorReport } from '../../src/protocol/modbus/doctor-types.js';
import { kill, rigUnavailable } from '../drivers/modbus-rig.js';
import { call, waitFor } from '../helpers/http.js';
import { needs, peerHook } from '../helpers/peers.js';
import { startRelayGateway, type RelayGateway } from '../helpers/relay-line.js';

const why = rigUnavailable();
const rigTest = needs(why, 'bus doctor listening rig tests');

interface Job { state: 'running' | 'done' | 'failed'; takes_line: boolean; report: DoctorReport | null; error: string | null }

let g: RelayGateway | undefined;
let master: ChildProcess | null = null;

test.before(peerHook(why, async () => {
  g = await startRelayGateway('9600,8,N,1', 'sdm630:1', (port, dir) => ({
    gateway: { id: 'doctor-listen', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port, baud_rate: 9600, parity: 'none', stop_bits: 1 }],
  }), ['other']);
}));
test.after(async () => {
  await kill(master);
  await g?.stop();
});

rigTest('listen: another master\'s unit, function and range heard, nothing sent, the bus running again afterwards', async () => {
  // A timeout of 1 s: pymodbus 3.0.0 with one under a second reads without waiting.
  master = spawn('/usr/bin/python3', ['scripts/modbus-rig/master.py', '--port', join(g!.dir, 'other'), '--timeout', '1'], { stdio: ['pipe', 'pipe', 'ignore'] });
  let out = '';
  master.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await waitFor(async () => out.includes('"ready"') || master!.exitCode !== null, 10_000, 'master.py ready');
  // The other master reads the SDM630's voltages (FC4 0-5) every 300 ms for 8 s.
  master.stdin!.write(`${JSON.stringify({ op: 'poll', fc: 4, unit: 1, address: 0, count: 6, interval: 0.3, duration: 8 })}\n`);

  const started = await call<Job>(g!.gw.httpPort, '/api/v1/buses/rs485/doctor', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ listen: 4 }) });
  assert.is(started.status, 202, JSON.stringify(started.body));
  assert.is(started.body.data.takes_line, true);
  const done = await waitFor(async () => {
    const job = (await call<Job>(g!.gw.httpPort, '/api/v1/buses/rs485/doctor')).body.data;
    return job.state !== 'running' && job;
  }, 30_000, 'the listening');
  assert.is(done.state, 'done', done.error ?? '');
  const report = done.report!;
  assert.equal(report.line && [report.line.baud_rate, report.line.parity], [9600, 'none']);
  assert.equal(report.traffic.map((t) => [t.unit, t.functions, t.ranges.map((r) => [r.fc, r.from, r.to])]), [[1, [4], [[4, 0, 5]]]], JSON.stringify(report.traffic));
  assert.ok(report.traffic[0]!.answered >= 5, `${report.traffic[0]!.answered} answers heard`);
  assert.is(report.sent_bytes, 0);
  await waitFor(async () => (await call<{ id: string; running: boolean }[]>(g!.gw.httpPort, '/api/v1/buses')).body.data.find((b) => b.id === 'rs485')?.running === true, 10_000, 'the bus running again');
  // The other master was never disturbed: every one of its reads answered.
  await waitFor(async () => out.includes('"summary"'), 15_000, 'the master\'s poll summary');
  const summary = JSON.parse(out.split('\n').find((l) => l.includes('"summary"'))!).summary as { ok: number; timeouts: number; errors: number };
  assert.equal([summary.timeouts, summary.errors], [0, 0], JSON.stringify(summary));
});

test.run();
