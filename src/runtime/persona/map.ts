/**
 * A persona's register map, pure: which model point sits at which input/holding register, what each is
 * bound to, and how a value becomes the words the model would read back (the codec run in reverse: the
 * model's scale, offset, coded values, scale factor, type, word and byte order). A register without a
 * value answers the format's "not implemented" pattern — the point's own `invalid` entry when the model
 * names one, else NaN for floats and the SunSpec sentinels for integers — never an invented 0.
 */
import type { ModelConfig, PointConfig } from '../../config/types.js';
import { deviceWords, encodeRegisters, pointWidth } from '../../protocol/modbus/codec.js';
import type { ModbusBlock } from '../../protocol/modbus/types.js';

export type WritePolicy = 'store' | 'forward' | 'reject';
export type RegisterTable = 'input' | 'holding';

export interface Source {
  device: string;
  point: string;
  /** The source point's value times this is in the persona point's unit (core/unit-convert.ts); absent: 1. */
  factor?: number;
}

/** Where a persona point's value comes from: shadow points (summed), times `scale`, or a constant. */
export interface Binding {
  sources: Source[];
  scale: number;
  /** The binding gives its own `scale`: that is the whole conversion, no unit is converted besides. */
  scaled?: boolean;
  constant?: number | string;
}

export interface Slot {
  name: string;
  point: PointConfig;
  block: ModbusBlock;
  table: RegisterTable;
  address: number;
  width: number;
  binding?: Binding;
  write: WritePolicy;
  /** The words served while there is no value. */
  missing: readonly number[];
}

/** Contiguous registers of one table held as one array; short gaps between points are bridged (see `blank`). */
export interface Cluster {
  table: RegisterTable;
  start: number;
  length: number;
  /** Offset of `start` in the table's word array. */
  at: number;
}

export interface PersonaMap {
  slots: Slot[];
  clusters: Cluster[];
  /** Words per table (the length of a snapshot's arrays). */
  size: Record<RegisterTable, number>;
  /** Each table's words before any point is set: a bridged gap reads 0, or NaN where the cluster is all floats. */
  blank: Record<RegisterTable, Uint16Array>;
}

/** Gaps up to this many registers join two points into one readable block (consumers read across reserved words). */
const BRIDGE = 16;

const SENTINEL: Record<string, bigint> = {
  int16: 0x8000n, uint16: 0xffffn, int32: 0x80000000n, uint32: 0xffffffffn,
  int64: 0x8000000000000000n, uint64: 0xffffffffffffffffn, bool: 0xffffn,
};

function patternWords(pattern: bigint, width: number, block: ModbusBlock): number[] {
  const bytes = new Uint8Array(width * 2);
  for (let i = width * 2 - 1, p = pattern; i >= 0; i--, p >>= 8n) bytes[i] = Number(p & 0xffn);
  return deviceWords(bytes, block);
}

/** The words a register of this point answers when it has no value. */
export function missingWords(point: PointConfig, block: ModbusBlock): number[] {
  const width = pointWidth(block);
  const declared = point.invalid?.[0]?.raw;
  if (typeof declared === 'string' && /^0x[0-9a-f]+$/i.test(declared)) return patternWords(BigInt(declared), width, block);
  if (typeof declared === 'number') {
    try {
      return encodeRegisters({ ...block, table: 'holding' }, declared, point.name);
    } catch { /* not this type's value: the default below */ }
  }
  if (block.data_type === 'string') return new Array<number>(width).fill(0);
  if (block.data_type === 'float32' || block.data_type === 'float64') {
    const bytes = new Uint8Array(width * 2);
    const view = new DataView(bytes.buffer);
    if (block.data_type === 'float32') view.setFloat32(0, Number.NaN);
    else view.setFloat64(0, Number.NaN);
    return deviceWords(bytes, block);
  }
  return patternWords(SENTINEL[block.data_type]!, width, block);
}

/**
 * The words for a value in engineering units, or null when it cannot be shown truthfully (not a number,
 * out of the type's range, a code the point does not have). `sf` is the scale factor's raw exponent.
 */
export function valueWords(slot: Slot, value: number | string, sf = 0): number[] | null {
  const { point, block } = slot;
  let raw: number | string = value;
  if (point.values) {
    const hit = Object.entries(point.values).find(([, meaning]) => String(meaning) === String(value));
    if (!hit) return null;
    raw = Number(hit[0]);
  } else if (typeof value === 'number' && block.data_type !== 'string') {
    raw = (value - (point.offset ?? 0)) / (point.scale ?? 1) / 10 ** sf;
    if (block.data_type !== 'float32' && block.data_type !== 'float64') raw = Math.round(raw);
  }
  try {
    return encodeRegisters({ ...block, table: 'holding' }, raw, point.name);
  } catch {
    return null;
  }
}

/** Parses one `bind` entry ("device.point", or { point | sum | value, scale?, negate? }); throws on nonsense. */
export function parseBinding(name: string, spec: unknown): Binding {
  const source = (text: unknown): Source => {
    if (typeof text !== 'string') throw new Error(`bind.${name}: a source is "<device>.<point>"`);
    const dot = text.indexOf('.');
    if (dot <= 0 || dot === text.length - 1) throw new Error(`bind.${name}: "${text}" is not "<device>.<point>"`);
    return { device: text.slice(0, dot), point: text.slice(dot + 1) };
  };
  if (typeof spec === 'string') return { sources: [source(spec)], scale: 1 };
  if (typeof spec !== 'object' || spec === null) throw new Error(`bind.${name}: expected "<device>.<point>" or an object`);
  const o = spec as Record<string, unknown>;
  const scale = (typeof o.scale === 'number' ? o.scale : 1) * (o.negate === true ? -1 : 1);
  if (o.value !== undefined) {
    if (typeof o.value !== 'number' && typeof o.value !== 'string') throw new Error(`bind.${name}.value: a number or a text`);
    return { sources: [], scale: 1, constant: o.value };
  }
  const scaled = typeof o.scale === 'number';
  if (Array.isArray(o.sum)) {
    if (o.sum.length === 0) throw new Error(`bind.${name}.sum: at least one source`);
    return { sources: o.sum.map(source), scale, scaled };
  }
  return { sources: [source(o.point)], scale, scaled };
}

const isRegisterTable = (t: string): t is RegisterTable => t === 'input' || t === 'holding';

/** The map of a model with its bindings and write policies; points outside the register tables are left out. */
export function buildMap(model: ModelConfig, bind: Readonly<Record<string, unknown>>, writes: Readonly<Record<string, WritePolicy>> = {}): PersonaMap {
  const slots: Slot[] = [];
  for (const point of model.points) {
    const block = point.modbus as ModbusBlock | undefined;
    if (!block || !isRegisterTable(block.table) || block.bit !== undefined) continue;
    const slot: Slot = {
      name: point.name, point, block, table: block.table, address: block.address, width: pointWidth(block),
      write: writes[point.name] ?? 'reject', missing: missingWords(point, block),
    };
    if (bind[point.name] !== undefined) slot.binding = parseBinding(point.name, bind[point.name]);
    slots.push(slot);
  }
  // A second address serving the same words: where sources disagree on a register (the DTSU666's energies at
  // 101Eh or 401Eh), a consumer reading either place gets the value, and both always agree (one binding).
  for (const [name, address] of Object.entries(model.persona?.also_at ?? {})) {
    const twin = slots.find((s) => s.name === name);
    if (!twin) throw new Error(`persona.also_at.${name}: model ${model.name} has no register point "${name}"`);
    slots.push({ ...twin, address, block: { ...twin.block, address }, write: 'reject' });
  }
  for (const name of Object.keys(bind)) {
    if (!slots.some((s) => s.name === name)) throw new Error(`bind.${name}: model ${model.name} has no register point "${name}"`);
  }
  for (const [name, policy] of Object.entries(writes)) {
    const slot = slots.find((s) => s.name === name);
    if (!slot) throw new Error(`write.${name}: model ${model.name} has no register point "${name}"`);
    if (policy !== 'reject' && slot.table !== 'holding') throw new Error(`write.${name}: an input register cannot be written`);
    if (policy === 'forward' && (slot.binding?.sources.length !== 1)) throw new Error(`write.${name}: "forward" needs the point bound to one source`);
  }
  const clusters: Cluster[] = [];
  const size: Record<RegisterTable, number> = { input: 0, holding: 0 };
  for (const table of ['input', 'holding'] as const) {
    const mine = slots.filter((s) => s.table === table).sort((a, b) => a.address - b.address);
    let current: Cluster | undefined;
    for (const s of mine) {
      if (current && s.address <= current.start + current.length + BRIDGE) {
        current.length = Math.max(current.length, s.address + s.width - current.start);
      } else {
        if (current) size[table] += current.length;
        current = { table, start: s.address, length: s.width, at: size[table] };
        clusters.push(current);
      }
    }
    if (current) size[table] += current.length;
  }
  const blank = { input: new Uint16Array(size.input), holding: new Uint16Array(size.holding) };
  for (const c of clusters) fillGaps(blank[c.table], c, slots.filter((s) => s.table === c.table && s.address >= c.start && s.address < c.start + c.length));
  return { slots, clusters, size, blank };
}

/**
 * A gap between the points of a cluster of IEEE floats (an Eastron or Chint meter: every value a float32, the
 * registers the model leaves out are the device's other floats, e.g. the SDM630's phase angles) reads NaN, as
 * an unbound float does, in the points' word order and at their word alignment; elsewhere it reads 0 (the
 * format has no "not available" a gap could use).
 */
function fillGaps(words: Uint16Array, cluster: Cluster, slots: readonly Slot[]): void {
  const first = slots[0];
  if (!first || !slots.every((s) => s.block.data_type === 'float32' && s.address % 2 === first.address % 2 && s.missing.join() === first.missing.join())) return;
  for (let a = cluster.start + ((cluster.start % 2) === (first.address % 2) ? 0 : 1); a + 1 < cluster.start + cluster.length; a += 2) {
    words.set(first.missing, cluster.at + a - cluster.start);
  }
}

/** The cluster holding registers [address, address + count) of a table, or undefined (exception 0x02). */
export function clusterOf(map: PersonaMap, table: RegisterTable, address: number, count: number): Cluster | undefined {
  for (const c of map.clusters) {
    if (c.table === table && address >= c.start && address + count <= c.start + c.length) return c;
  }
  return undefined;
}
