/**
 * The Modbus server in front of a Modbus TCP device: the device is a scripted slave written from the spec
 * (test/helpers/modbus-tcp-slave.ts) that holds one answer past the gateway's timeout and sends it later with
 * its old transaction id while another request is outstanding. Upstream requests carry the gateway's own
 * transaction ids; an answer whose id is not the outstanding request's is dropped and counted
 * (`strayAnswers`), so a late reply never becomes another request's answer — not the next request's, and
 * not the one that comes round to the same id in a small id space (modbus-serial's TCP port counts 0..255).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { freePort, waitFor } from '../drivers/modbus-rig.js';
import { RawModbusClient, read, type Answer } from '../helpers/modbus-tcp-client.js';
import { ScriptedTcpSlave, slaveValue } from '../helpers/modbus-tcp-slave.js';

let slave: ScriptedTcpSlave;
let gw: Gateway;
let dir: string;
let port = 0;
const open: RawModbusClient[] = [];

test.before(async () => {
  slave = await ScriptedTcpSlave.start();
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-door-tcp-'));
  port = await freePort();
  const raw = {
    gateway: { id: 'door-tcp', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'plc', driver: 'modbus-tcp', host: '127.0.0.1', port: slave.port, timeout: '1s', retries: 1 }],
    // One two-register point: the device's own polls have the same shape as the clients' reads.
    models: { reg: { points: [{ name: 'v', type: 'int', modbus: { table: 'holding', address: 0, data_type: 'uint32' } }] } },
    devices: [
      { id: 'd1', model: 'reg', bus: 'plc', unit_id: 1, poll: '1h' },
      { id: 'd2', model: 'reg', bus: 'plc', unit_id: 2, poll: '1h' },
    ],
    servers: [{ id: 'door', transport: 'tcp', host: '127.0.0.1', port, max_age: '1h', miss_rate: 1000, units: [{ unit: 1, device: 'd1' }, { unit: 2, device: 'd2' }] }],
  };
  gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
  await waitFor('both devices polled', () => gw.shadow.GetDevicePoint('d1', 'v') === 1000 * 65536 + 1001 && gw.shadow.GetDevicePoint('d2', 'v') === 2000 * 65536 + 2001, 5000);
});

test.after(async () => {
  for (const c of open) c.close();
  await gw?.stop();
  await slave?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function client(): Promise<RawModbusClient> {
  const c = await RawModbusClient.open(port);
  open.push(c);
  return c;
}

const busFigures = (): { strayAnswers?: number; timeouts: number } => (gw.drivers.get('plc')!.stats!() as { bus: { strayAnswers?: number; timeouts: number } }).bus;

/** The answer the device gives to a read of `count` registers at `address` (FC3 or FC4). */
function expected(unit: number, fc: 3 | 4, address: number, count: number): number[] {
  const words = Array.from({ length: count }, (_, i) => slaveValue(unit, address + i));
  return [fc, count * 2, ...words.flatMap((w) => [w >> 8, w & 0xff])];
}

/**
 * The held reply was dropped and counted. Each timed-out request's answer comes late here — the held one,
 * and any a stalled event loop made late (slave and gateway share this process) — so strays equal timeouts.
 */
function droppedEveryLateReply(before: ReturnType<typeof busFigures>): void {
  const after = busFigures();
  const timeouts = after.timeouts - before.timeouts;
  assert.ok(timeouts >= 1, 'the held request timed out');
  assert.is((after.strayAnswers ?? 0) - (before.strayAnswers ?? 0), timeouts, 'every late reply was dropped and counted');
}

/** A problem with an answer, or '' when it is the answer to this request. */
function check(a: Answer, tid: number, unit: number, fc: 3 | 4, address: number, count: number): string {
  const want = expected(unit, fc, address, count);
  if (a.tid === tid && a.unit === unit && JSON.stringify(a.pdu) === JSON.stringify(want)) return '';
  return `tid ${a.tid} unit ${a.unit} pdu ${a.pdu.join(',')}; want tid ${tid} unit ${unit} pdu ${want.join(',')}`;
}

test('4 clients x 8 pipelined requests with the same transaction ids and a late reply upstream: 0 mismatched answers', async () => {
  const clients = await Promise.all(Array.from({ length: 4 }, () => client()));
  // Half of them hits from the last poll (holding 0..1, young for an hour), half misses that each take a
  // frame upstream: 16 misses fit the bus queue, so every request gets its data, none a busy exception.
  const plan = (ci: number, i: number): { unit: number; fc: 3 | 4; address: number; count: number } =>
    ((ci + i) % 2 === 0
      ? { unit: 1 + (i % 2), fc: 3, address: i % 4 === 0 ? 0 : 1, count: i % 4 === 0 ? 2 : 1 }
      : { unit: 1 + (ci % 2), fc: i % 3 === 0 ? 4 : 3, address: 100 + ci * 40 + i * 4, count: 2 });
  const seenBefore = slave.seen.length;
  const before = busFigures();
  // The first of these requests to reach the device is answered only after the gateway timed it out, just
  // before the device answers the next request (the retry): with its old transaction id.
  slave.holdNext(1);
  for (const [ci, c] of clients.entries()) {
    for (let i = 0; i < 8; i++) {
      const p = plan(ci, i);
      c.send(i + 1, p.unit, read(p.fc, p.address, p.count));
    }
  }
  const problems: string[] = [];
  await Promise.all(clients.map(async (c, ci) => {
    for (let i = 0; i < 8; i++) {
      const p = plan(ci, i);
      const problem = check(await c.next(10_000), i + 1, p.unit, p.fc, p.address, p.count);
      if (problem) problems.push(`client ${ci} #${i}: ${problem}`);
    }
  }));
  assert.is(problems.length, 0, `mismatched answers:\n${problems.join('\n')}`);
  assert.equal(slave.late.length, 1, 'the device sent one late reply');
  const late = slave.late[0]!;
  assert.ok(late.tid !== late.outstanding, 'it carried its own id, not the outstanding request\'s');
  assert.is(slave.seen.length - seenBefore, 17, 'each miss went to the device once, the held one twice');
  droppedEveryLateReply(before);
  const metrics = await (await fetch(`http://127.0.0.1:${gw.httpPort}/metrics`)).text();
  assert.match(metrics, /^shadowgate_bus_stray_answers_total\{bus="plc"\} [1-9]\d*$/m);
});

test('a reply later by 256 requests (modbus-serial\'s id space) is dropped, not taken for the request with the id that came round', async () => {
  const c = await client();
  const before = busFigures();
  // Answered just before the device's answer to the 256th request after it: in an id space of 256 that
  // request carries the same transaction id, unit, function and length as the late reply.
  slave.holdNext(256);
  const problems: string[] = [];
  for (let i = 0; i < 300; i++) {
    const address = 1000 + i * 2;
    const problem = check(await c.request(i + 1, 1, read(3, address, 2), 5000), i + 1, 1, 3, address, 2);
    if (problem) problems.push(`#${i}: ${problem}`);
  }
  assert.is(slave.holding, false, 'the device sent its late reply');
  assert.is(problems.length, 0, `mismatched answers:\n${problems.join('\n')}`);
  droppedEveryLateReply(before);
});

test.run();
