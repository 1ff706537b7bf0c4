/**
 * The Modbus TCP server ("front door") in front of a real RTU bus: the pymodbus slave on a socat pty pair
 * behind a running gateway, clients written from the spec over real TCP. The slave counts every request it
 * gets (--count), so "frames on the bus" are counted where they land; its TCP port serves the same
 * datastore, so a direct read there is the reference a door answer must equal byte for byte.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { freePort, Rig, rigUnavailable, sleep, waitFor } from '../drivers/modbus-rig.js';
import { ownMs, stamp, watchLateness } from '../helpers/lateness.js';
import { RawModbusClient, read, writeRegister, writeRegisters } from '../helpers/modbus-tcp-client.js';
import { hasPeer, needs, peerHook } from '../helpers/peers.js';

const why = rigUnavailable();
const rigTest = needs(why, 'Modbus door tests');

let rig: Rig;
let gw: Gateway;
let dir: string;
let port = 0;
let countFile = '';
const open: RawModbusClient[] = [];

const model = {
  limits: { max_registers: 60 },
  points: [
    { name: 'a', type: 'int', modbus: { table: 'holding', address: 0, data_type: 'int16' } },
    { name: 'b', type: 'int', modbus: { table: 'holding', address: 1, data_type: 'uint16' } },
    { name: 'c', type: 'int', modbus: { table: 'holding', address: 2, data_type: 'int32' } },
    { name: 'f', type: 'float', modbus: { table: 'holding', address: 6, data_type: 'float32' } },
    { name: 'voltage', type: 'float', modbus: { table: 'input', address: 0, data_type: 'float32' } },
    { name: 'relay', type: 'int', modbus: { table: 'coil', address: 0, data_type: 'bool' } },
  ],
};

/** Requests the slave got, by "unit:fc:address:count". */
async function counts(): Promise<Record<string, number>> {
  try {
    return JSON.parse(await readFile(countFile, 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}
/** Frames the gateway sent to a device (unit 9 is not served by the slave, so the slave never counts them). */
const sent = (device: string): number =>
  (gw.drivers.get('rs485')!.stats!() as { devices: Record<string, { requests: number }> }).devices[device]!.requests;
const sum = (c: Record<string, number>, match: (key: string) => boolean): number => Object.entries(c).filter(([k]) => match(k)).reduce((n, [, v]) => n + v, 0);

async function client(): Promise<RawModbusClient> {
  const c = await RawModbusClient.open(port);
  open.push(c);
  return c;
}

/** The slave's own answer over its TCP port (same datastore): the reference. */
async function direct(unit: number, pdu: number[]): Promise<number[]> {
  const c = await RawModbusClient.open(rig.tcpPort);
  try {
    return (await c.request(1, unit, pdu)).pdu;
  } finally {
    c.close();
  }
}

test.before(peerHook(why, async () => { try { await setup(); } catch (e) { console.error(e); throw e; } }));
async function setup(): Promise<void> {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-door-'));
  countFile = path.join(dir, 'counts.json');
  rig = new Rig('1,2,5', true, ['--count', countFile, '--write-delay', '0.5']);
  await rig.start();
  port = await freePort();
  const raw = {
    gateway: { id: 'door', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'rs485', driver: 'modbus-rtu', port: rig.master, baud_rate: 9600, timeout: '200ms', retries: 1 }],
    models: { meter: model, sparse: { points: [{ name: 'x', type: 'float', modbus: { table: 'holding', address: 0, data_type: 'float32' } }] } },
    devices: [
      { id: 'm1', model: 'meter', bus: 'rs485', unit_id: 1, poll: '200ms' },
      { id: 'm5', model: 'sparse', bus: 'rs485', unit_id: 5, poll: '1s' },
      { id: 'm2', model: 'sparse', bus: 'rs485', unit_id: 2, poll: '200ms' },
      { id: 'ghost', model: 'sparse', bus: 'rs485', unit_id: 9, poll: '1s' },
    ],
    servers: [{
      id: 'door', transport: 'tcp', host: '127.0.0.1', port, max_age: '2s', diagnostic_unit: 100,
      units: [{ unit: 1, device: 'm1' }, { unit: 11, device: 'm1', writes: true }, { unit: 5, device: 'm5' }, { unit: 9, device: 'ghost' }, { unit: 2, device: 'm2', max_age: '1s' }],
    }],
  };
  gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
  await waitFor('m1 polled', () => gw.shadow.GetDevicePoint('m1', 'b') === 50000, 5000);
}

test.after(async () => {
  for (const c of open) c.close();
  await gw?.stop();
  await rig?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

rigTest('answers are byte-identical to the device: polled ranges from the image, others from the bus, a large read split at the model limit', async () => {
  const c = await client();
  const before = await counts();
  const cases: Array<[number, number[]]> = [
    [1, read(3, 0, 8)], [1, read(3, 2, 2)], [1, read(4, 0, 2)], [1, read(1, 0, 1)], // polled
    [1, read(3, 10, 14)], [1, read(2, 0, 19)], [1, read(1, 3, 21)], [5, read(3, 0, 4)], // not polled
    [1, read(4, 100, 125)], // 125 registers of a model limited to 60: three frames
  ];
  let tid = 40;
  const got: number[][] = [];
  for (const [unit, pdu] of cases) {
    const answer = await c.request(++tid, unit, pdu);
    assert.equal([answer.tid, answer.unit], [tid, unit]);
    got.push(answer.pdu);
  }
  const after = await counts(); // before the direct reads, which the slave counts too
  assert.equal(['1:4:100:60', '1:4:160:60', '1:4:220:5'].map((k) => (after[k] ?? 0) - (before[k] ?? 0)), [1, 1, 1], JSON.stringify(after));
  assert.is((after['1:3:2:2'] ?? 0) - (before['1:3:2:2'] ?? 0), 0, 'a sub-range of the poll never went to the bus');
  for (const [i, [unit, pdu]] of cases.entries()) assert.equal(got[i], await direct(unit, pdu), `unit ${unit} ${pdu.join(',')}`);
  const fig = gw.modbusServers.figures()['door']!;
  assert.ok(fig.units['1']!.hits >= 4, JSON.stringify(fig.units['1']));
});

rigTest('3 clients reading a polled range at 1 Hz add no frames beyond 5% of the polls', async () => {
  const clients = await Promise.all([client(), client(), client()]);
  const before = await counts();
  const pollKeys = new Set(Object.keys(before).filter((k) => k.startsWith('1:')));
  const hitsBefore = gw.modbusServers.figures()['door']!.units['1']!.hits;
  for (let round = 0; round < 3; round++) {
    const answers = await Promise.all(clients.map((c, i) => c.request(round * 10 + i, 1, read(3, 1, 7))));
    for (const a of answers) assert.is(a.pdu[0], 3);
    await sleep(1000);
  }
  const after = await counts();
  const polls = sum(after, (k) => pollKeys.has(k)) - sum(before, (k) => pollKeys.has(k));
  const added = sum(after, (k) => k.startsWith('1:') && !pollKeys.has(k)) - sum(before, (k) => k.startsWith('1:') && !pollKeys.has(k));
  assert.ok(polls >= 10, `the gateway kept polling (${polls} frames)`);
  assert.ok(added <= polls * 0.05, `door added ${added} frames over ${polls} poll frames`);
  assert.is(gw.modbusServers.figures()['door']!.units['1']!.hits - hitsBefore, 9);
});

rigTest('5 concurrent identical reads of an unpolled range cost one frame and get one answer', async () => {
  const clients = await Promise.all(Array.from({ length: 5 }, () => client()));
  const before = await counts();
  const answers = await Promise.all(clients.map(async (c) => {
    const a = await c.request(7, 1, read(4, 300, 50));
    assert.is(a.tid, 7);
    return a.pdu;
  }));
  const after = await counts();
  assert.is((after['1:4:300:50'] ?? 0) - (before['1:4:300:50'] ?? 0), 1);
  const reference = await direct(1, read(4, 300, 50));
  for (const a of answers) assert.equal(a, reference);
});

rigTest('exceptions: 0x0A unmapped at once, 0x0B for a silent unit, device exceptions passed through, 0x01 for a write not allowed with no frame', async () => {
  const c = await client();
  const before = await counts();
  const t0 = stamp();
  const unmapped = await c.request(1, 77, read(3, 0, 1));
  const unmappedMs = ownMs(t0, stamp()); // less what this machine kept the gateway's thread from a CPU
  assert.equal(unmapped.pdu, [0x83, 0x0a]);
  assert.ok(unmappedMs < 200, `0x0A took ${unmappedMs.toFixed(0)} ms (the bus timeout is 200 ms)`);

  assert.equal((await c.request(2, 9, read(3, 0, 2))).pdu, [0x83, 0x0b], 'the ghost unit never answers');
  assert.equal((await c.request(3, 5, read(3, 4, 2))).pdu, await direct(5, read(3, 4, 2)), 'exception 2 of the sparse map, as the device says it');
  assert.equal((await c.request(3, 5, read(3, 4, 2))).pdu, [0x83, 0x02]);

  const denied = await c.request(4, 1, writeRegister(40, 7));
  assert.equal([denied.tid, denied.unit, denied.pdu], [4, 1, [0x86, 0x01]]);
  assert.equal((await c.request(5, 1, [43, 14, 1, 0])).pdu, [0xab, 0x01], 'an unserved function code');
  assert.equal((await c.request(6, 1, read(3, 0, 126))).pdu, [0x83, 0x03], 'a quantity over the spec limit');
  const after = await counts();
  assert.equal(Object.keys(after).filter((k) => /^(1|77):(6|16):/.test(k)), [], 'no write and no frame for unit 77 reached the slave');
  assert.not.ok(Object.keys(after).some((k) => k.startsWith('77:')));
  assert.ok(Object.keys(before).length > 0);

  // The ghost is backed off after its failures: a burst of requests costs at most one probe, each answered 0x0B.
  await waitFor('ghost backed off', () => ((gw.drivers.get('rs485')!.stats!() as { bus: { degradedDevices: string[] } }).bus.degradedDevices.includes('ghost')), 8000);
  const ghostBefore = sent('ghost');
  const t1 = performance.now();
  for (let i = 0; i < 10; i++) assert.equal((await c.request(100 + i, 9, read(3, 0, 2))).pdu, [0x83, 0x0b]);
  const burstMs = performance.now() - t1;
  const ghostFrames = sent('ghost') - ghostBefore;
  // The poller's own probe comes about once a second: a burst a loaded machine stretched over seconds meets more.
  assert.ok(ghostFrames <= 2 + Math.floor(burstMs / 1000), `${ghostFrames} frames to the dead unit for 10 requests (${burstMs.toFixed(0)} ms)`);
});

rigTest('a client hammering the dead unit at 20/s: the healthy meter keeps its poll rate, the dead one costs a probe per backoff', async () => {
  const c = await client();
  // One holding read of m1 per poll cycle (every 200 ms): its count is the meter's cycle count.
  const cycles = (k: string): boolean => k.startsWith('1:3:0:');
  const before = await counts();
  const ghostBefore = sent('ghost');
  const windowMs = 4000;
  const end = Date.now() + windowMs;
  const late = watchLateness();
  let answers = 0;
  while (Date.now() < end) {
    const a = await c.request(answers & 0xffff, 9, read(3, 0, 2));
    assert.equal(a.pdu, [0x83, 0x0b]);
    answers++;
    await sleep(50);
  }
  const after = await counts();
  const polled = sum(after, cycles) - sum(before, cycles);
  const ghost = sent('ghost') - ghostBefore;
  // Rates over the time the gateway's thread (this one) could run: a busy job beside the tests takes some of the
  // window from the meter's polls and the client alike. The probes are over the wall time, as the backoff is.
  const own = Math.min(windowMs, late.ownMs);
  const wall = late.ms + late.ownMs;
  assert.ok(answers >= 40 * (own / windowMs), `${answers} answers in ${windowMs} ms (${late})`);
  assert.ok(polled >= 0.9 * (own / 200), `meter polled ${polled} cycles in ${own.toFixed(0)} ms of the thread's own time (every 200 ms: ${(own / 200).toFixed(1)}; ${late})`);
  assert.ok(ghost <= wall / 1000 + 1, `${ghost} frames to the dead unit for ${answers} requests in ${wall.toFixed(0)} ms (the poller probes it about once a second)`);
});

rigTest('a value is never served older than max_age: a unit that stops answering gets 0x0B once its last poll is too old', async () => {
  const c = await client();
  const fresh = await c.request(1, 2, read(3, 0, 2));
  assert.equal(fresh.pdu, await direct(2, read(3, 0, 2)));
  rig.toggleUnit2(); // unit 2 falls silent
  try {
    const t0 = performance.now();
    const late = watchLateness();
    let last = fresh.pdu;
    while (performance.now() - t0 < 4000) {
      // Timed when sent, not when answered: on a loaded machine the answer to a hit sent in time can come late.
      // The last good poll can be read late too, by as much as the machine kept the gateway's thread from a CPU.
      const sent = performance.now() - t0;
      const bound = late.widen(1200);
      last = (await c.request(2, 2, read(3, 0, 2))).pdu;
      if (last[0] !== 3) break;
      assert.ok(sent < bound, `an answer from the image after max_age (1 s) plus a poll (asked at ${Math.round(sent)} ms, bound ${Math.round(bound)})`);
      await sleep(50);
    }
    assert.equal(last, [0x83, 0x0b]);
  } finally {
    rig.toggleUnit2();
  }
});

rigTest('4 clients x 8 pipelined requests with the same transaction ids: every answer is its own request\'s, in order', async () => {
  const clients = await Promise.all(Array.from({ length: 4 }, () => client()));
  const plan = (ci: number, i: number): [number, number[]] => {
    const kind = (ci + i) % 4;
    if (kind === 0) return [1, read(3, i, 3)]; // hit
    if (kind === 1) return [1, read(4, 310 + ci * 8 + i, 2)]; // miss
    if (kind === 2) return [5, read(3, 0, 2)]; // another unit
    return [1, read(2, i, 5 + ci)]; // bits, miss
  };
  for (const [ci, c] of clients.entries()) for (let i = 0; i < 8; i++) c.send(i + 1, plan(ci, i)[0], plan(ci, i)[1]);
  let mismatched = 0;
  let busyAnswers = 0;
  const problems: string[] = [];
  await Promise.all(clients.map(async (c, ci) => {
    for (let i = 0; i < 8; i++) {
      const a = await c.next(5000);
      const [unit, pdu] = plan(ci, i);
      const want = await direct(unit, pdu);
      // A full bus queue is answered 0x06 (busy): still this request's answer, just not its data.
      const busy = a.pdu.length === 2 && a.pdu[0] === (pdu[0]! | 0x80) && a.pdu[1] === 6;
      if (busy) busyAnswers++;
      if (a.tid !== i + 1 || a.unit !== unit || (!busy && JSON.stringify(a.pdu) !== JSON.stringify(want))) {
        mismatched++;
        problems.push(`client ${ci} #${i}: got tid ${a.tid} unit ${a.unit} ${a.pdu.join(',')}; want ${want.join(',')}`);
      }
    }
  }));
  assert.is(mismatched, 0, problems.join('\n'));
  assert.ok(busyAnswers <= 8, `${busyAnswers} of 32 answered busy`);
});

rigTest('writes: through a unit with writes, the image is invalidated, a write whose client gave up is sent exactly once', async () => {
  const c = await client();
  // Fresh image of holding 0..7, then a write to register 1: the next read shows it at once.
  assert.is((await c.request(1, 1, read(3, 0, 8))).pdu[0], 3);
  const ok = await c.request(2, 11, writeRegister(1, 12345));
  assert.equal(ok.pdu, writeRegister(1, 12345), 'FC6 answer echoes the request');
  const next = await c.request(3, 1, read(3, 0, 2));
  assert.equal(next.pdu, [3, 4, 0xff, 0xff, 12345 >> 8, 12345 & 0xff]);
  assert.equal((await c.request(4, 11, writeRegisters(1, [50000]))).pdu, [16, 0, 1, 0, 1]);
  await waitFor('read-back in the shadow', () => gw.shadow.GetDevicePoint('m1', 'b') === 50000, 3000);

  // The slave answers writes at 150+ after 500 ms, the bus times out at 200 ms; the client leaves after 100 ms.
  const before = await counts();
  const quitter = await client();
  quitter.send(9, 11, writeRegister(150, 4242));
  await sleep(100);
  quitter.close();
  await sleep(1500);
  const after = await counts();
  assert.is((after['1:6:150:1'] ?? 0) - (before['1:6:150:1'] ?? 0), 1, 'exactly one write frame, never retried');
  assert.equal(await direct(1, read(3, 150, 1)), [3, 2, 4242 >> 8, 4242 & 0xff]);
  // The slave slept 500 ms on the write: polls of unit 1 meanwhile timed out too, and it may be paused for a probe
  // period (1 s here) — answered 0x0B at once, as the door promises — until its probe finds it back.
  const again = await client();
  const seen: string[] = [];
  for (const end = Date.now() + 5000; !seen.includes('3,2') && Date.now() < end; await sleep(100)) {
    seen.push((await again.request(10 + seen.length, 1, read(3, 0, 1))).pdu.slice(0, 2).join(','));
  }
  assert.ok(seen.includes('3,2'), `the bus serves unit 1 again within 5 s of the late answer: ${seen.join(' | ')}`);
  assert.ok(seen.every((a) => a === '3,2' || a === '131,11'), `answers until then: data or 0x0B (paused), got ${seen.join(' | ')}`);
});

/** Runs a pymodbus client script (the client Home Assistant's modbus integration is built on) against the door. */
function pymodbus(script: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn('/usr/bin/python3', ['-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`pymodbus client timed out: ${err}`)); }, 15_000);
    child.on('exit', (code) => { clearTimeout(timer); if (code === 0) resolve(out.trim()); else reject(new Error(`pymodbus client exited ${code}: ${err}`)); });
  });
}

rigTest('what Home Assistant sends for the documented sensors (pymodbus client): float32 input, int16 holding, a coil', async () => {
  const out = await pymodbus(`
import struct
from pymodbus.client import ModbusTcpClient
c = ModbusTcpClient("127.0.0.1", port=${port})
assert c.connect()
ir = c.read_input_registers(0, 2, slave=1)
hr = c.read_holding_registers(0, 1, slave=1)
co = c.read_coils(0, 1, slave=1)
gone = c.read_holding_registers(0, 1, slave=42)
print(struct.unpack(">f", struct.pack(">HH", *ir.registers))[0], struct.unpack(">h", struct.pack(">H", hr.registers[0]))[0], co.bits[0], gone.isError(), getattr(gone, "exception_code", None))
c.close()
`);
  assert.is(out, '231.5 -1 True True 10');
});

rigTest('the diagnostic unit lists each mapped unit online flag and age; figures count per client and unit', async () => {
  const c = await client();
  let words: number[] = [];
  const end = Date.now() + 3000;
  do { // the slow write before may have cost m1 a failed poll; it answers again within a cycle or two
    const diag = await c.request(1, 100, read(4, 0, 8));
    assert.is(diag.pdu[0], 4);
    words = Array.from({ length: 8 }, (_, i) => (diag.pdu[2 + i * 2]! << 8) | diag.pdu[3 + i * 2]!);
  } while (words[0] !== 1 && Date.now() < end && (await sleep(100), true));
  assert.equal([words[0], words[2], words[6]], [1, 1, 0], 'm1 twice online, the ghost not');
  assert.ok(words[1]! <= 2, `m1 polled within 2 s (age ${words[1]} s)`);
  assert.equal((await c.request(2, 100, read(4, 0, 11))).pdu, [0x84, 0x02], 'past the list (5 units, 10 registers)');
  const fig = gw.modbusServers.figures()['door']!;
  assert.ok(fig.clients['127.0.0.1']!.requests >= fig.total.hits);
  assert.ok(fig.units['77']!.codes['10']! >= 1);
  assert.ok(fig.units['9']!.codes['11']! >= 1);
  const metrics = await (await fetch(`http://127.0.0.1:${gw.httpPort}/metrics`)).text();
  assert.match(metrics, /shadowgate_modbus_server_unit_hits_total\{server="door",unit="1"\} [1-9]\d*/);
  assert.match(metrics, /shadowgate_modbus_server_unit_exceptions_total\{server="door",unit="77",code="10"\} [1-9]/);
  assert.match(metrics, /shadowgate_modbus_server_client_requests_total\{server="door",client="127.0.0.1"\} [1-9]/);
  // Latency histograms per client and per unit: every answered request is in them once; a miss took at
  // least one bus transaction (request and answer at 9600 baud: > 10 ms, a lower bound noise cannot undercut).
  const sample = (line: string): number => Number(new RegExp(`^${line.replace(/[{}.+]/g, '\\$&')} (\\S+)$`, 'm').exec(metrics)?.[1] ?? NaN);
  const who = 'server="door",client="127.0.0.1"';
  const clientCount = sample(`shadowgate_modbus_server_client_latency_seconds_count{${who}}`);
  assert.is(clientCount, sample(`shadowgate_modbus_server_client_requests_total{${who}}`), 'one latency observation per counted request');
  assert.is(sample(`shadowgate_modbus_server_client_latency_seconds_bucket{${who},le="+Inf"}`), clientCount);
  const m1 = 'server="door",unit="1"';
  const m1Count = sample(`shadowgate_modbus_server_unit_latency_seconds_count{${m1}}`);
  assert.ok(m1Count - sample(`shadowgate_modbus_server_unit_latency_seconds_bucket{${m1},le="0.01"}`) >= 1, 'a miss took a bus transaction (> 10 ms at 9600 baud)');
  assert.ok(sample(`shadowgate_modbus_server_unit_latency_seconds_sum{${m1}}`) > 0.01);
  const lint = spawnSync('/usr/bin/promtool', ['check', 'metrics'], { input: metrics, encoding: 'utf8', timeout: 10_000 });
  const absent = (lint.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT' && '/usr/bin/promtool is missing (apt-get install prometheus)';
  if (hasPeer(absent, 'promtool check of the door figures')) {
    assert.is(`${lint.error?.message ?? ''}${lint.stdout}${lint.stderr}`.trim(), '', 'promtool check metrics is clean with the server figures');
  }
});

test.run();
