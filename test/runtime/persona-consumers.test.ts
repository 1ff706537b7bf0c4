/**
 * Every persona model with known consumers, read over the wire as each consumer reads it (persona-consumer-reads.ts,
 * written from the consumers' own sources): the Eastron and Chint meters on an RTU server (one end of a socat pty
 * pair) read by the pymodbus master on the other end, the same units again on a Modbus TCP server, the EM24 bound
 * exactly as docs/personas.md's Victron example binds it, and the SunSpec meters walked from 40000 as SMA's Data
 * Manager does. Every measurement a consumer reads is bound to its own source point, so each decoded value must be
 * the source's value: no exception, no blank pattern, nothing outside the meter's range. Each register a consumer
 * reads where the model has a point must also be in the model's own list of what that consumer reads
 * (`persona.consumers`), which the docs' "Known consumers" table and the load-time check rest on.
 */
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { validateConfig } from '../../src/config/load.js';
import { startGateway, type Gateway } from '../../src/gateway.js';
import { silentLogger } from '../../src/util/logger.js';
import { freePort, kill, rigUnavailable, sleep, socatPair } from '../drivers/modbus-rig.js';
import { RawModbusClient, read } from '../helpers/modbus-tcp-client.js';
import { needs, peerHook } from '../helpers/peers.js';
import { RtuMaster } from '../helpers/rtu-master.js';
import {
  CONSUMER_READS, SUNSPEC_203_SF, SUNSPEC_MANDATORY, SUNSPEC_NAMES, decode, type ConsumerRead,
} from './persona-consumer-reads.js';

const why = rigUnavailable();
const rigTest = needs(why, 'persona consumer tests');

type Obj = Record<string, unknown>;
interface ModelPoint { name: string; type: string; unit?: string; modbus?: { table: string; address: number | string; data_type: string } }
interface Model { points: ModelPoint[]; persona: { constants?: Obj; consumers?: { name: string; reads: string[] }[]; same_as?: Record<string, string>; fc04?: string } }

const model = (name: string): Model => JSON.parse(readFileSync(`board/models/${name}.json`, 'utf8')) as Model;

/** The RTU meters (unit on the RTU server; the TCP server carries each again at unit + 10). */
const RTU_UNITS: [unit: number, persona: string][] = [[1, 'eastron-sdm630'], [2, 'eastron-sdm120'], [3, 'eastron-sdm230'], [4, 'chint-dtsu666']];
const SUNSPEC_UNITS: [unit: number, persona: string][] = [[126, 'sunspec-meter-203'], [127, 'sunspec-meter-203-213']];

/** A plausible value for a point of this unit, the k-th of its model (distinct, exact in every format's resolution). */
function valueFor(point: ModelPoint, k: number): number {
  if (point.name.includes('power_factor')) return point.unit === '%' ? 95 - 0.5 * k : 0.95 - 0.005 * k;
  switch (point.unit) {
    case 'V': return 225 + 1.3 * k;
    case 'A': return 4 + 0.125 * k;
    case 'W': return 900 + 37.5 * k;
    case 'VA': return 1000 + 41.5 * k;
    case 'var': return 150 + 12.5 * k;
    case 'Hz': return 50.01 + 0.01 * (k % 5);
    case 'kWh': case 'kvarh': return 10_000 + 123.5 * k;
    case 'Wh': case 'VAh': case 'varh': return 1_000_000 + 1000 * k;
    case '%': return 2.5 + 0.25 * k;
    default: return 10 + k;
  }
}

/** What the persona must serve per point name of a unit: a source point's value, a given value, or a model constant. */
type Served = Map<string, number | string>;

let dir = '';
let socat: ChildProcess | null = null;
let gw: Gateway;
let master: RtuMaster;
let tcpPort = 0;
let victronPort = 0;
const served = new Map<number, Served>();
/** The EM24's values, unit 1 of its own TCP server (the docs' example). */
let victronServed: Served = new Map();
const tcpUnitOf = (rtuUnit: number): number => rtuUnit + 10;

/** The docs' Victron example, as written in docs/personas.md. */
function victronExample(): Obj {
  const text = readFileSync('docs/personas.md', 'utf8');
  const block = [...text.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => m[1]!).find((b) => b.includes('"victron-meter"'));
  assert.ok(block, 'docs/personas.md has the Victron example');
  return JSON.parse(block) as Obj;
}

test.before(peerHook(why, async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'sg-consumers-'));
  const consumer = path.join(dir, 'ttyA');
  const slavePort = path.join(dir, 'ttyB');
  socat = await socatPair(consumer, slavePort);
  tcpPort = await freePort();

  // Each unit's consumer-read measurements bound to source points of their own (`src.u<unit>_<point>`).
  const sourcePoints: Obj[] = [];
  const bindFor = (unit: number, persona: string): Obj => {
    const m = model(persona);
    const constants = m.persona.constants ?? {};
    const reads = new Set((m.persona.consumers ?? []).flatMap((c) => c.reads));
    const values: Served = new Map(Object.entries(constants).filter(([, v]) => typeof v === 'number' || typeof v === 'string') as [string, number | string][]);
    const bind: Obj = {};
    let k = 0;
    for (const p of m.points) {
      if (!reads.has(p.name) || constants[p.name] !== undefined || m.persona.same_as?.[p.name]) continue;
      if (p.type === 'string') {
        bind[p.name] = { value: `SN-${unit}` };
        values.set(p.name, `SN-${unit}`);
      } else if (p.type === 'float') {
        const name = `u${unit}_${p.name}`;
        const value = valueFor(p, k++);
        sourcePoints.push({ name, type: 'float', access: 'R', ...(p.unit ? { unit: p.unit } : {}), sim: { fn: 'constant', value } });
        bind[p.name] = `src.${name}`;
        values.set(p.name, value);
      }
    }
    for (const [twin, of] of Object.entries(m.persona.same_as ?? {})) if (values.has(of)) values.set(twin, values.get(of)!);
    served.set(unit, values);
    return bind;
  };
  const rtuUnits = RTU_UNITS.map(([unit, persona]) => ({ unit, persona, max_age: '30s', bind: bindFor(unit, persona) }));
  const sunspecUnits = SUNSPEC_UNITS.map(([unit, persona]) => ({ unit, persona, max_age: '30s', bind: bindFor(unit, persona) }));

  // The EM24 as the docs bind it to an SDM630 named `grid`: grid's points get values of their own.
  const victron = victronExample();
  const emUnit = (victron.units as Obj[])[0]!;
  const em = model('carlo-gavazzi-em24');
  const emValues: Served = new Map(Object.entries(em.persona.constants ?? {}) as [string, number | string][]);
  const gridPoints: Obj[] = [];
  let k = 0;
  for (const [name, to] of Object.entries(emUnit.bind as Obj)) {
    if (typeof to === 'string') {
      const p = em.points.find((q) => q.name === name)!;
      const value = valueFor(p, k++);
      gridPoints.push({ name: to.slice('grid.'.length), type: 'float', access: 'R', ...(p.unit ? { unit: p.unit } : {}), sim: { fn: 'constant', value } });
      emValues.set(name, value);
    } else {
      emValues.set(name, (to as { value: number | string }).value);
    }
  }
  victronServed = emValues;

  const raw = {
    gateway: { id: 'consumers', data_dir: dir, log_level: 'silent' },
    http: { host: '127.0.0.1', port: 0 }, mqtt: { enable: false }, history: { enable: false },
    buses: [{ id: 'sim', driver: 'simulator' }],
    models: { source: { points: sourcePoints }, 'grid-source': { points: gridPoints } },
    devices: [{ id: 'src', model: 'source', bus: 'sim', poll: '500ms' }, { id: 'grid', model: 'grid-source', bus: 'sim', poll: '500ms' }],
    servers: [
      { id: 'meter-port', transport: 'rtu', port: slavePort, baud_rate: 38400, parity: 'none', data_bits: 8, stop_bits: 1, units: rtuUnits },
      { id: 'lan', transport: 'tcp', host: '127.0.0.1', port: tcpPort, units: [
        ...rtuUnits.map((u) => ({ ...u, unit: tcpUnitOf(u.unit) })), ...sunspecUnits] },
      { ...victron, host: '127.0.0.1', port: await freePort() },
    ],
  };
  gw = await startGateway(validateConfig(raw, { env: {} }), { log: silentLogger, raw });
  master = new RtuMaster();
  await master.start(consumer, 38400);
  victronPort = (raw.servers[2] as { port: number }).port;
}));

test.after(async () => {
  await master?.stop();
  await gw?.stop();
  await kill(socat);
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** Reads over TCP, retrying 0x0B (no fresh source sample yet) for up to 10 s after the start. */
async function tcpRead(c: RawModbusClient, unit: number, fc: 3 | 4, address: number, count: number): Promise<number[] | string> {
  const end = Date.now() + 10_000;
  for (let tid = 1; ; tid++) {
    const { pdu } = await c.request(tid & 0xffff, unit, read(fc, address, count));
    if (pdu[0]! & 0x80) {
      if (pdu[1] === 0x0b && Date.now() < end) {
        await sleep(100);
        continue;
      }
      return `exception ${pdu[1]}`;
    }
    return Array.from({ length: pdu[1]! / 2 }, (_, i) => (pdu[2 + 2 * i]! << 8) | pdu[3 + 2 * i]!);
  }
}

/** The model point a read lands on: FC04 reads the input table (or holding where the model says FC04 reads it). */
function pointAt(m: Model, r: ConsumerRead): ModelPoint | undefined {
  const tables = r.fc === 3 ? ['holding'] : m.persona.fc04 === 'holding' ? ['holding'] : m.persona.fc04 === 'input-or-holding' ? ['input', 'holding'] : ['input'];
  for (const table of tables) {
    const p = m.points.find((q) => q.modbus?.table === table && Number(q.modbus.address) === r.address);
    if (p) return p;
  }
  return undefined;
}

/** Judges one read's words as the consumer decodes them; returns problems (empty: as the consumer needs it). */
function judge(m: Model, consumer: string, values: Served, r: ConsumerRead, words: number[] | string): string[] {
  const at = `${consumer} FC0${r.fc} ${r.address.toString(16).padStart(4, '0')}h`;
  if (typeof words === 'string') return [`${at}: ${words}`];
  const got = decode(words, r.decode, r.divisor);
  if (r.expect !== undefined) {
    const ok = Array.isArray(r.expect) ? (r.expect as readonly number[]).includes(got as number) : got === r.expect;
    return ok ? [] : [`${at}: ${String(got)}, the consumer needs ${JSON.stringify(r.expect)}`];
  }
  const point = pointAt(m, r);
  if (!point) return [];
  const problems: string[] = [];
  const listed = (m.persona.consumers ?? []).find((c) => c.name.startsWith(consumer));
  if (!listed?.reads.includes(point.name)) problems.push(`${at} is ${point.name}, which the model's consumer list for ${consumer} lacks`);
  const want = values.get(point.name);
  if (want === undefined) return [...problems, `${at} (${point.name}): the test bound no value there`];
  if (typeof want === 'string' || typeof got === 'string') return String(got) === String(want) ? problems : [...problems, `${at} (${point.name}): "${String(got)}", served "${String(want)}"`];
  const tolerance = r.decode === 'f32' ? Math.abs(want) * 1e-6 + 1e-9 : 0.5 / r.divisor + 1e-9;
  if (!(Math.abs(got - want) <= tolerance)) problems.push(`${at} (${point.name}): ${got}, source ${want}`);
  return problems;
}

rigTest('RTU and TCP: every register each Eastron and Chint consumer reads answers the source value as it decodes it, the same words on both transports', async () => {
  const c = await RawModbusClient.open(tcpPort);
  const problems: string[] = [];
  const counts: string[] = [];
  try {
    for (const [unit, persona] of RTU_UNITS) {
      const m = model(persona);
      for (const [consumer, reads] of Object.entries(CONSUMER_READS[persona]!)) {
        let notModelled = 0;
        for (const r of reads) {
          const over = await tcpRead(c, tcpUnitOf(unit), r.fc, r.address, r.count);
          const res = await master.run({ op: 'read', fc: r.fc, unit, address: r.address, count: r.count });
          const rtu = res.ok ? res.regs! : res.error!;
          problems.push(...judge(m, consumer, served.get(unit)!, r, rtu));
          if (JSON.stringify(over) !== JSON.stringify(rtu)) problems.push(`${persona} ${consumer} ${r.address.toString(16)}h: TCP ${JSON.stringify(over)}, RTU ${JSON.stringify(rtu)}`);
          if (r.expect === undefined && !pointAt(m, r)) notModelled++;
        }
        counts.push(`${persona} · ${consumer}: ${reads.length} reads${notModelled ? ` (${notModelled} where the model has no point: answered, not judged)` : ''}`);
      }
    }
  } finally {
    c.close();
  }
  console.log(`    ${counts.join('\n    ')}`);
  assert.equal(problems, []);
});

rigTest('TCP: the EM24 bound as the docs\' Victron example: every register the GX reads, decoded as dbus-modbus-client does, is the source\'s value or the model\'s constant', async () => {
  const c = await RawModbusClient.open(victronPort);
  const m = model('carlo-gavazzi-em24');
  const problems: string[] = [];
  try {
    for (const r of CONSUMER_READS['carlo-gavazzi-em24']!['Victron GX']!) {
      problems.push(...judge(m, 'Victron GX', victronServed, r, await tcpRead(c, 1, r.fc, r.address, r.count)));
    }
  } finally {
    c.close();
  }
  console.log(`    carlo-gavazzi-em24 · Victron GX: ${CONSUMER_READS['carlo-gavazzi-em24']!['Victron GX']!.length} reads`);
  assert.equal(problems, []);
});

/** SunSpec's int16/acc32/float32/bitfield32 from words at an offset of a model's block. */
function sunspecValue(block: number[], offset: number, type: string): number {
  const b = Buffer.alloc(4);
  if (type === 'int16') return (block[offset]! << 16) >> 16;
  b.writeUInt16BE(block[offset]!, 0);
  b.writeUInt16BE(block[offset + 1]!, 2);
  return type === 'float32' ? b.readFloatBE(0) : b.readUInt32BE(0);
}

rigTest('TCP: SMA\'s Data Manager walks each SunSpec meter from 40000 and reads every mandatory point: the source\'s values after their scale factors', async () => {
  const c = await RawModbusClient.open(tcpPort);
  const problems: string[] = [];
  try {
    for (const [unit, persona] of SUNSPEC_UNITS) {
      const m = model(persona);
      const values = served.get(unit)!;
      const reads = new Set((m.persona.consumers ?? []).flatMap((x) => x.reads));
      const regs = async (address: number, count: number): Promise<number[]> => {
        const out: number[] = [];
        for (let at = address; at < address + count; at += 125) {
          const got = await tcpRead(c, unit, 3, at, Math.min(125, address + count - at));
          if (typeof got === 'string') throw new Error(`${persona} ${at}: ${got}`);
          out.push(...got);
        }
        return out;
      };
      assert.equal(await regs(40000, 2), [0x5375, 0x6e53], `${persona}: "SunS" at 40000`);
      const seen: number[] = [];
      for (let at = 40002; seen.length < 5;) {
        const [id, len] = await regs(at, 2);
        if (id === 0xffff) break;
        seen.push(id!);
        const block = await regs(at, 2 + len!);
        const text = (o: number, n: number): string => Buffer.from(block.slice(o, o + n).flatMap((w) => [w >> 8, w & 0xff])).toString('latin1').replace(/\0+$/, '');
        if (id === 1) {
          if (text(2, 16) !== values.get('manufacturer')) problems.push(`${persona} Mn "${text(2, 16)}"`);
          if (text(18, 16) !== values.get('model')) problems.push(`${persona} Md "${text(18, 16)}"`);
          if (text(50, 16) !== values.get('serial_number')) problems.push(`${persona} SN "${text(50, 16)}", served ${String(values.get('serial_number'))}`);
        } else if (SUNSPEC_MANDATORY[id!]) {
          for (const [name, offset, type, sf] of SUNSPEC_MANDATORY[id!]!) {
            const ours = `${id === 213 ? 'float_' : ''}${SUNSPEC_NAMES[name]!}`;
            if (!reads.has(ours)) problems.push(`${persona}: SMA reads ${id}.${name}, which the model's consumer list lacks (${ours})`);
            const raw = sunspecValue(block, offset, type);
            const want = values.get(ours);
            if (name === 'Evt') {
              if (raw !== 0xffffffff && raw !== want) problems.push(`${persona} ${id}.Evt ${raw}`);
              continue;
            }
            const exp = sf ? (block[SUNSPEC_203_SF[sf]!]! << 16) >> 16 : 0;
            const got = raw * 10 ** exp;
            const tolerance = type === 'float32' ? Math.abs(Number(want)) * 1e-6 : 0.5 * 10 ** exp + 1e-9;
            if (typeof want !== 'number' || !(Math.abs(got - want) <= tolerance)) problems.push(`${persona} ${id}.${name} (${ours}): ${got}, source ${String(want)}`);
          }
        }
        at += 2 + len!;
      }
      const expected = m.persona.constants?.float_meter_id ? [1, 203, 213] : [1, 203];
      assert.equal(seen, expected, `${persona}: the chain`);
      const points = seen.reduce((n, id) => n + (SUNSPEC_MANDATORY[id]?.length ?? (id === 1 ? 3 : 0)), 0);
      console.log(`    ${persona} · SMA Data Manager: the chain ${seen.join(' → ')}, ${points} mandatory points and their scale factors`);
    }
  } finally {
    c.close();
  }
  assert.equal(problems, []);
});

test.run();
