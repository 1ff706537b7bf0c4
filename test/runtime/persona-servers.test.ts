/**
 * Personas on real peers: a running gateway serves the library SDM630 as unit 2 on an RTU slave port
 * (one end of a socat pty pair) polled by the pymodbus master on the other end, and as a TCP persona
 * read by a raw Modbus TCP client. The source is a simulator device whose points the test writes
 * through the gateway's write pipeline (each write is read back, so it is also a fresh sample).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { createLogger, silentLogger } from '../../src/util/logger.js';
import { freePort, kill, rigUnavailable, sleep, waitFor } from '../drivers/modbus-rig.js';
import { RawModbusClient, read, writeRegister } from '../helpers/modbus-tcp-client.js';
import { needs, peerHook } from '../helpers/peers.js';
import { RtuMaster } from '../helpers/rtu-master.js';

const why = rigUnavailable();
const rigTest = needs(why, 'persona server tests');

let dir = '';
let socat: ChildProcess | null = null;
let gw: Gateway;
let master: RtuMaster;
let tcpPort = 0;
const MAX_AGE_MS = 1500;

/** SDM630 total_power (input 0x34) and voltage_l1 (input 0), float32 high word first. */
const f32 = (hi: number, lo: number): number => {
  const b = Buffer.alloc(4);
  b.writeUInt16BE(hi, 0);
  b.writeUInt16BE(lo, 2);
  return b.readFloatBE(0);
};
const setSource = (values: Record<string, number>): Promise<void> =>
  gw.io.writePoints('p1', Object.entries(values).map(([name, value]) => ({ name, value })));

test.before(peerHook(why, async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-persona-'));
  const consumer = path.join(dir, 'ttyA');
  const slavePort = path.join(dir, 'ttyB');
  socat = spawn('socat', [`pty,raw,echo=0,link=${consumer}`, `pty,raw,echo=0,link=${slavePort}`], { stdio: 'ignore' });
  await waitFor('socat links', () => existsSync(consumer) && existsSync(slavePort), 5000);
  tcpPort = await freePort();
  const raw = {
    gateway: { id: 'persona', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: {
      source: { points: [
        { name: 'power', type: 'float', access: 'RW', sim: { fn: 'constant', value: 0 } },
        { name: 'voltage', type: 'float', access: 'RW', sim: { fn: 'constant', value: 230 } },
        { name: 'sf', type: 'int', access: 'RW', sim: { fn: 'constant', value: 0 } },
      ] },
      'em24-config': { points: [
        { name: 'application', type: 'int', access: 'RW', modbus: { table: 'holding', address: '0xA000', data_type: 'uint16' } },
      ] },
    },
    // A poll far longer than the test: the source is fresh only when the test writes it.
    devices: [{ id: 'p1', model: 'source', bus: 'sim', poll: '10m' }],
    servers: [
      { id: 'grid', transport: 'rtu', port: slavePort, baud_rate: 9600, parity: 'none', data_bits: 8, stop_bits: 1, units: [
        { unit: 2, persona: 'eastron-sdm630', max_age: `${MAX_AGE_MS}ms`, bind: { total_power: { point: 'p1.power', negate: true }, voltage_l1: 'p1.voltage' } },
        { unit: 3, persona: 'em24-config', bind: { application: { value: 5 } }, write: { application: 'store' } },
      ] },
      { id: 'tcp', transport: 'tcp', host: '127.0.0.1', port: tcpPort, units: [
        { unit: 1, persona: 'eastron-sdm630', max_age: `${MAX_AGE_MS}ms`, stale: 'exception', capture: true, bind: { voltage_l1: 'p1.voltage' } },
        // Silent when stale (the default), a constant-only persona (never stale) and a device unit of the door.
        { unit: 4, persona: 'eastron-sdm630', max_age: `${MAX_AGE_MS}ms`, bind: { voltage_l1: 'p1.voltage' } },
        { unit: 5, persona: 'em24-config', bind: { application: { value: 5 } } },
        { unit: 9, device: 'p1' },
        { unit: 126, persona: 'sunspec-inverter-103', max_age: '10s', bind: { ac_power: 'p1.power', w_sf: 'p1.sf' } },
        { unit: 127, persona: 'sunspec-meter-203-213', max_age: '10s', bind: { power: 'p1.power', W_SF: 'p1.sf' } },
      ] },
    ],
  };
  gw = await startGateway(validateConfig(raw, { env: {} }), { log: process.env.PERSONA_DEBUG ? createLogger('debug') : silentLogger, raw });
  master = new RtuMaster();
  await master.start(consumer);
}));

test.after(async () => {
  await master?.stop();
  await gw?.stop();
  await kill(socat);
  if (dir) await rm(dir, { recursive: true, force: true });
});

rigTest('RTU: a pymodbus master polling unit 2 every 200 ms gets every answer, equal to the source', async () => {
  await setSource({ power: 1200, voltage: 231 });
  const written = new Set([-1200]);
  // The source changes while the master polls; writes every 300 ms also keep it fresh.
  let stop = false;
  const changer = (async () => {
    for (let i = 0; !stop; i++) {
      const power = 1000 + (i % 7) * 50;
      written.add(-power);
      await setSource({ power, voltage: 231 });
      await sleep(300);
    }
  })();
  // PERSONA_POLL_S: a longer soak by hand (make test runs 10 s).
  const { results, summary } = await master.poll({ fc: 4, unit: 2, address: 0x34, count: 2, interval: 0.2 }, Number(process.env.PERSONA_POLL_S ?? 10));
  stop = true;
  await changer;
  assert.equal(summary, { ok: results.length, timeouts: 0, errors: 0 });
  assert.ok(results.length >= 20, `${results.length} polls`);
  for (const r of results) assert.ok(written.has(f32(r.regs![0]!, r.regs![1]!)), `served ${f32(r.regs![0]!, r.regs![1]!)}, never written`);
  await setSource({ power: 777, voltage: 232 });
  const now = await master.run({ op: 'read', fc: 4, unit: 2, address: 0, count: 2 });
  assert.is(f32(now.regs![0]!, now.regs![1]!), 232);
  const unbound = await master.run({ op: 'read', fc: 4, unit: 2, address: 2, count: 2 });
  assert.ok(Number.isNaN(f32(unbound.regs![0]!, unbound.regs![1]!)), 'an unbound voltage_l2 is NaN, not 0');
});

rigTest('RTU: other unit ids stay silent', async () => {
  await setSource({ power: 100, voltage: 230 });
  assert.is((await master.run({ op: 'read', fc: 4, unit: 7, address: 0, count: 2 })).error, 'timeout');
  assert.ok((await master.run({ op: 'read', fc: 4, unit: 2, address: 0, count: 2 })).ok, 'unit 2 answers right after');
});

rigTest('RTU: stale after max_age is silent, and the first new sample brings the persona back', async () => {
  await setSource({ power: 100, voltage: 229 });
  assert.ok((await master.run({ op: 'read', fc: 4, unit: 2, address: 0, count: 2 })).ok);
  // No writes from here: the source ages past max_age; the master's reads time out (bounded wait).
  const end = Date.now() + MAX_AGE_MS + 10_000;
  let silent = false;
  while (!silent && Date.now() < end) {
    const r = await master.run({ op: 'read', fc: 4, unit: 2, address: 0, count: 2 });
    silent = !r.ok && r.error === 'timeout';
    if (!silent) assert.ok(r.ok, JSON.stringify(r));
  }
  assert.ok(silent, 'the persona went silent');
  await setSource({ power: 100, voltage: 229 });
  const back = await master.run({ op: 'read', fc: 4, unit: 2, address: 0, count: 2 });
  assert.is(f32(back.regs![0]!, back.regs![1]!), 229);
});

rigTest('RTU: a configuration register written with FC6 reads back as written (store)', async () => {
  assert.equal((await master.run({ op: 'read', fc: 3, unit: 3, address: 0xa000, count: 1 })).regs, [5]);
  assert.ok((await master.run({ op: 'write', fc: 6, unit: 3, address: 0xa000, values: [7] })).ok);
  assert.equal((await master.run({ op: 'read', fc: 3, unit: 3, address: 0xa000, count: 1 })).regs, [7]);
  assert.equal(await master.run({ op: 'write', unit: 2, address: 0, values: [1, 2] }), { ok: false, error: 'exception 2' }, 'a persona register without a write policy is rejected');
});

rigTest('TCP: a persona unit answers from the snapshot, 0x0B when stale, and is captured', async () => {
  const c = await RawModbusClient.open(tcpPort);
  try {
    await setSource({ power: 0, voltage: 233.5 });
    const a = await c.request(1, 1, read(4, 0, 2));
    assert.is(a.unit, 1);
    assert.is(f32((a.pdu[2]! << 8) | a.pdu[3]!, (a.pdu[4]! << 8) | a.pdu[5]!), 233.5);
    assert.equal((await c.request(2, 1, writeRegister(0, 1))).pdu, [0x86, 0x02]);
    const end = Date.now() + MAX_AGE_MS + 10_000;
    let pdu: number[] = [];
    for (let tid = 3; Date.now() < end; tid++) {
      pdu = (await c.request(tid, 1, read(4, 0, 2))).pdu;
      if (pdu[0] === 0x84) break;
      await sleep(100);
    }
    assert.equal(pdu, [0x84, 0x0b]);
    const res = await fetch(`http://127.0.0.1:${gw.httpPort}/api/v1/servers/tcp/capture?unit=1`);
    assert.is(res.status, 200);
    const capture = ((await res.json()) as { data: Record<string, unknown>[] }).data;
    assert.equal(capture[0], { ...capture[0]!, unit: 1, fc: 4, address: 0, count: 2, interval_ms: null, answer: 'data' });
    assert.equal(capture.at(-1), { ...capture.at(-1)!, answer: 'exception', exception: 0x0b });
  } finally {
    c.close();
  }
  assert.is((await fetch(`http://127.0.0.1:${gw.httpPort}/api/v1/servers/grid/capture`)).status, 404, 'no unit of grid captures');
});

rigTest('TCP: one server mixes personas and a door unit; a silent persona drops only its own answer', async () => {
  const c = await RawModbusClient.open(tcpPort);
  try {
    await setSource({ power: 0, voltage: 230 });
    assert.is((await c.request(1, 4, read(4, 0, 2))).tid, 1, 'fresh: unit 4 answers');
    // p1 is on a simulator bus, not a Modbus one: the door answers its unit from the map generated from its model.
    assert.equal((await c.request(2, 9, read(3, 0, 1))).pdu.slice(0, 2), [0x03, 0x02], 'the door unit answers beside the personas');
    const end = Date.now() + MAX_AGE_MS + 10_000;
    while (Date.now() < end && c.closed === false) {
      await sleep(200);
      c.send(100, 4, read(4, 0, 2));
      const next = await c.request(101, 5, read(3, 0xa000, 1));
      if (next.tid === 101) break; // unit 4 stayed silent: the answer after it came first
      assert.is(next.tid, 100);
      assert.equal((await c.next()).tid, 101);
    }
    // Stale now: unit 4's request gets nothing, the one behind it on the same connection is answered.
    c.send(200, 4, read(4, 0, 2));
    const after = await c.request(201, 5, read(3, 0xa000, 1));
    assert.equal([after.tid, after.unit, after.pdu], [201, 5, [3, 2, 0, 5]]);
    const late = await c.next(500).then(() => 'answered', (e: Error) => e.message);
    assert.match(late, /no answer/, 'the stale request is never answered late');
  } finally {
    c.close();
  }
});

rigTest('persona requests are counted per unit in the servers\' figures: /metrics shows RTU and TCP persona units', async () => {
  await setSource({ power: 10, voltage: 230 });
  assert.ok((await master.run({ op: 'read', fc: 4, unit: 2, address: 0, count: 2 })).ok);
  const metrics = await (await fetch(`http://127.0.0.1:${gw.httpPort}/metrics`, { signal: AbortSignal.timeout(5000) })).text();
  const value = (name: string, labels: string): number => {
    const line = metrics.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
    assert.ok(line, `${name}{${labels}} in /metrics`);
    return Number(line.split(' ').at(-1));
  };
  assert.ok(value('shadowgate_modbus_server_unit_requests_total', 'server="grid",unit="2"') >= 20, 'the RTU persona\'s polls');
  assert.ok(value('shadowgate_modbus_server_unit_hits_total', 'server="grid",unit="2"') >= 20);
  assert.ok(value('shadowgate_modbus_server_unit_writes_total', 'server="grid",unit="3"') >= 1, 'the stored FC6 write');
  assert.ok(value('shadowgate_modbus_server_unit_exceptions_total', 'server="grid",unit="2",code="2"') >= 1, 'the rejected write');
  assert.ok(value('shadowgate_modbus_server_unit_exceptions_total', 'server="tcp",unit="1",code="11"') >= 1, 'the TCP persona\'s stale 0x0B');
});

rigTest('TCP: a SunSpec inverter persona walked while its source changes at 50 Hz: valid chain, 0 torn W/W_SF pairs', async () => {
  const c = await RawModbusClient.open(tcpPort);
  let stop = false;
  // raw W encodes the scale factor it was written with (raw / 1000 - 2 = W_SF): a torn pair shows.
  const changer = (async () => {
    for (let i = 0; !stop; i++) {
      const sf = (i % 4) - 1;
      await gw.io.writePoints('p1', [{ name: 'power', value: (1000 * (sf + 2) + (i % 500)) * 10 ** sf }, { name: 'sf', value: sf }]);
      await sleep(20);
    }
  })();
  try {
    await sleep(100); // the changer's first values are in
    const word = (pdu: number[], i: number): number => (pdu[2 + i * 2]! << 8) | pdu[3 + i * 2]!;
    let tid = 1;
    assert.equal((await c.request(tid++, 126, read(3, 40000, 2))).pdu, [3, 4, 0x53, 0x75, 0x6e, 0x53], 'SunS');
    const chain: number[] = [];
    for (let address = 40002; chain.length < 4;) {
      const id = word((await c.request(tid++, 126, read(3, address, 1))).pdu, 0);
      chain.push(id);
      if (id === 0xffff) break;
      address += 2 + word((await c.request(tid++, 126, read(3, address + 1, 1))).pdu, 0);
    }
    assert.equal(chain, [1, 103, 0xffff]);
    let torn = 0;
    const seen = new Set<number>();
    for (let n = 0; n < 1000; n++) {
      const pdu = (await c.request(tid++ & 0xffff, 126, read(3, 40083, 2))).pdu;
      const raw = word(pdu, 0);
      const sf = (word(pdu, 1) << 16) >> 16;
      seen.add(sf);
      if (Math.floor(raw / 1000) - 2 !== sf) torn++;
    }
    assert.is(torn, 0, 'torn W/W_SF pairs');
    assert.ok(seen.size >= 2, `the scale factor moved during the reads (${[...seen].join(', ')})`);
  } finally {
    stop = true;
    await changer;
    c.close();
  }
});

rigTest('TCP: a SunSpec meter persona walked 40000, 1, 203, 213, end while its source changes at 50 Hz: 0 torn W/W_SF pairs, 213\'s W from the same snapshot', async () => {
  const c = await RawModbusClient.open(tcpPort);
  let stop = false;
  let changes = 0;
  // raw W encodes the scale factor it was written with (raw / 1000 - 2 = W_SF): a torn pair shows.
  const changer = (async () => {
    for (let i = 0; !stop; i++) {
      const sf = (i % 4) - 1;
      await gw.io.writePoints('p1', [{ name: 'power', value: (1000 * (sf + 2) + (i % 500)) * 10 ** sf }, { name: 'sf', value: sf }]);
      changes++;
      await sleep(20);
    }
  })();
  try {
    await sleep(100);
    const word = (pdu: number[], i: number): number => (pdu[2 + i * 2]! << 8) | pdu[3 + i * 2]!;
    let tid = 1;
    const ask = async (address: number, count: number): Promise<number[]> => {
      const pdu = (await c.request(tid++ & 0xffff, 127, read(3, address, count))).pdu;
      assert.is(pdu[0], 3, `read ${address} x${count}: ${JSON.stringify(pdu)}`);
      return Array.from({ length: count }, (_, i) => word(pdu, i));
    };
    assert.equal(await ask(40000, 2), [0x5375, 0x6e53], 'SunS');
    // The walk as a SunSpec reader does it from the specification: ID, then L, each on its own.
    const chain: number[] = [];
    let address = 40002;
    while (chain.length < 6) {
      const [id] = await ask(address, 1);
      chain.push(id!);
      if (id === 0xffff) break;
      address += 2 + (await ask(address + 1, 1))[0]!;
    }
    assert.equal(chain, [1, 203, 213, 0xffff]);
    assert.is(address, 40302);
    // PERSONA_SUNSPEC_READS=10000: the 10k-read figure by hand (make test reads at least 2000).
    const reads = Number(process.env.PERSONA_SUNSPEC_READS ?? 2000);
    let torn = 0;
    let floatTorn = 0;
    const seen = new Set<number>();
    const started = changes;
    // At least `reads` reads, and across at least 50 source changes (each one a chance to tear), within 30 s.
    const deadline = Date.now() + 30_000;
    let n = 0;
    for (; (n < reads || changes - started < 50) && Date.now() < deadline; n++) {
      if (n % 2 === 0) {
        const [raw, , , , sfWord] = await ask(40087, 5); // W, WphA-C, W_SF of model 203
        const sf = (sfWord! << 16) >> 16;
        seen.add(sf);
        if (Math.floor(raw! / 1000) - 2 !== sf) torn++;
      } else {
        // 203's W and W_SF and 213's W (offset 28, 40204) in one request: one snapshot, the same watts.
        const r = await ask(40087, 119);
        const sf = (r[4]! << 16) >> 16;
        const w = Buffer.from(Uint16Array.of(r[118]!, r[117]!).buffer).readFloatLE(0);
        if (Math.floor(r[0]! / 1000) - 2 !== sf) torn++;
        if (Math.abs(w - r[0]! * 10 ** sf) > Math.abs(w) * 1e-6) floatTorn++;
      }
    }
    console.log(`sunspec 203+213 walk: ${n} reads during ${changes - started} source changes, ${torn} torn W/W_SF, ${floatTorn} float W apart from W x 10^W_SF`);
    assert.ok(changes - started >= 50, `${changes - started} source changes during the reads`);
    assert.is(torn, 0, 'torn W/W_SF pairs');
    assert.is(floatTorn, 0, '213 W not the same snapshot as 203 W x 10^W_SF');
    assert.ok(seen.size >= 2, `the scale factor moved during the reads (${[...seen].join(', ')})`);
  } finally {
    stop = true;
    await changer;
    c.close();
  }
});

test.run();
