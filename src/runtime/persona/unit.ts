/**
 * One persona unit: a library model's registers served from shadow points. Its answers come from one
 * immutable snapshot (a word array per table) rebuilt whenever a bound device's values change, so a
 * value and its scale factor, or the two words of a float, always come from the same rebuild, and a read
 * touches no bus and builds nothing but its answer. Freshness is checked per request on the shadow's
 * monotonic "seen" times: past `max_age` of any bound point the unit is silent (the consumer's
 * meter-loss behaviour), answers 0x0B, or holds the last snapshot, as configured.
 */
import { unitFactor } from '../../core/unit-convert.js';
import type { ModelConfig } from '../../config/types.js';
import type { Clock } from '../../core/clock.js';
import type { DeviceIO } from '../../core/io.js';
import type { Shadow } from '../../core/shadow.js';
import { decodeRegisters } from '../../protocol/modbus/codec.js';
import { EXCEPTION, decodeRequest, encodeException, encodeRegisters, encodeWriteAnswer, type ServerRequest } from '../../protocol/modbus/pdu.js';
import { zeroCounts, type Counts } from '../door/figures.js';
import { exceptionFor } from '../door/handler.js';
import { Capture } from './capture.js';
import { buildMap, clusterOf, valueWords, type PersonaMap, type Slot, type WritePolicy } from './map.js';

export type StalePolicy = 'silent' | 'exception' | 'hold';

export interface PersonaUnitConfig {
  unit: number;
  model: ModelConfig;
  bind: Readonly<Record<string, unknown>>;
  write?: Readonly<Record<string, WritePolicy>>;
  maxAgeMs: number;
  stale: StalePolicy;
  capture?: boolean;
  /** W: the largest power the site can see; sets the SunSpec power scale factors (powerScaleFactor). */
  ratedPower?: number;
}

/** SunSpec scale factors of power quantities (W, VA, var, DC W), as the library's models name them. */
const POWER_SF = /^(w|va|var|dcw)_sf$/i;

/** The smallest power-of-ten exponent at which `ratedPower` fits a 16-bit signed register (32767). */
export const powerScaleFactor = (ratedPower: number): number => Math.max(0, Math.ceil(Math.log10(ratedPower / 32_767)));

export interface PersonaDeps {
  shadow: Shadow;
  io?: DeviceIO;
  clock: Clock;
  /** The unit of a source device's point, as its model gives it (undefined: none, or not known). */
  unitOf?(device: string, point: string): string | undefined;
}

interface Snapshot {
  input: Uint16Array;
  holding: Uint16Array;
}

/**
 * A persona unit's requests in the shape the door counts its units (door/figures.ts), so /metrics reads both
 * alike: reads served are `hits` (from the snapshot, no bus frame), never `misses`; `silent` counts requests
 * left unanswered (stale and silent).
 */
export interface PersonaCounts extends Counts {
  silent: number;
}

export class PersonaUnit {
  readonly unit: number;
  readonly counts: PersonaCounts = { ...zeroCounts(), silent: 0 };
  readonly map: PersonaMap;
  readonly capture: Capture | null;
  private snap: Snapshot;
  private readonly stored = new Map<string, number[]>();
  private readonly devices: Set<string>;
  private readonly sources: { device: string; point: string }[];
  /** Snapshots built (for tests and stats). */
  rebuilds = 0;

  constructor(private readonly config: PersonaUnitConfig, private readonly deps: PersonaDeps) {
    this.unit = config.unit;
    // The model's constants (marker, IDs, identity, scale factors) unless the unit binds the point itself.
    // A rated power above 32.7 kW raises the power scale factors, so W never clips to "not implemented".
    const ratedSf = config.ratedPower === undefined ? undefined : powerScaleFactor(config.ratedPower);
    const constants = Object.fromEntries(Object.entries(config.model.persona?.constants ?? {}).map(([name, value]) =>
      [name, { value: ratedSf !== undefined && POWER_SF.test(name) && typeof value === 'number' ? Math.max(value, ratedSf) : value }]));
    // SunSpec's DA (device address) is the unit id the persona answers as, not the model's placeholder 1.
    if ('device_address' in constants) constants.device_address = { value: config.unit };
    // A point that is the same measurement in a second encoding (SunSpec 213's float W beside 203's W) serves
    // its twin's binding, so one `bind` feeds both; binding the point itself wins.
    const twins = Object.fromEntries(Object.entries(config.model.persona?.same_as ?? {})
      .filter(([, twin]) => config.bind[twin] !== undefined).map(([name, twin]) => [name, config.bind[twin]]));
    this.map = buildMap(config.model, { ...constants, ...twins, ...config.bind }, config.write);
    // A source in another unit than the persona's point is converted (a meter's PF 0.95 → SunSpec's 95 %, kW → W),
    // unless the binding gives its own `scale`: then that is the whole conversion (configs written before).
    for (const slot of this.map.slots) {
      if (slot.binding?.scaled) continue;
      for (const source of slot.binding?.sources ?? []) source.factor = unitFactor(deps.unitOf?.(source.device, source.point), slot.point.unit, slot.name);
    }
    this.sources = this.map.slots.flatMap((s) => s.binding?.sources ?? []);
    // The shadow holds values rounded to the source model's display `decimals` (950.25 W shows as 950.3); a persona
    // is a meter, and a meter answers what it measured, so the shadow keeps the unrounded value of every point a
    // persona reads beside the rounded one (only those: a column for every point would cost memory for nothing).
    for (const s of this.sources) deps.shadow.KeepExact(s.device, s.point);
    this.devices = new Set(this.sources.map((s) => s.device));
    this.capture = config.capture ? new Capture(deps.clock) : null;
    this.snap = this.build();
  }

  start(): void {
    this.deps.shadow.bus.on(this, 'dataChange', (e) => {
      if (this.devices.has(e.id)) this.snap = this.build();
    });
  }

  stop(): void {
    this.deps.shadow.bus.off(this);
  }

  /**
   * Age of the oldest bound point's last sample, ms (Infinity while one was never sampled); 0 without
   * bindings. A sample the device marked "not available" is fresh but has no value: its register answers
   * "not implemented" while the rest is served.
   */
  oldestAgeMs(): number {
    const { shadow, clock } = this.deps;
    const t = shadow.table;
    const now = clock.mono();
    let oldest = 0;
    for (const s of this.sources) {
      const d = shadow.slotIndex(s.device);
      const p = d < 0 ? undefined : t.devices[d]?.points.get(s.point);
      if (p === undefined) return Infinity;
      oldest = Math.max(oldest, now - t.ptSeenMono[p]!);
    }
    return oldest;
  }

  /** The answer PDU to a request PDU, or null for silence. */
  async answer(pdu: Uint8Array): Promise<Uint8Array | null> {
    const fc = pdu[0] ?? 0;
    const decoded = decodeRequest(pdu);
    const out = decoded.ok ? await this.serve(decoded.req) : encodeException(fc, decoded.exception);
    this.capture?.record(this.unit, decoded.ok ? decoded.req : { fc, address: 0, count: 0 }, out);
    this.count(out);
    return out;
  }

  private count(out: Uint8Array | null): void {
    const c = this.counts;
    c.requests++;
    if (out === null) c.silent++;
    else if ((out[0]! & 0x80) !== 0) {
      c.exceptions++;
      c.codes[out[1]!] = (c.codes[out[1]!] ?? 0) + 1;
    } else if (out[0] === 6 || out[0] === 16) c.writes++;
    else c.hits++;
  }

  private async serve(req: ServerRequest): Promise<Uint8Array | null> {
    if (req.fc === 3 || req.fc === 4) {
      if (this.config.stale !== 'hold' && this.oldestAgeMs() > this.config.maxAgeMs) {
        return this.config.stale === 'exception' ? encodeException(req.fc, EXCEPTION.targetFailed) : null;
      }
      // FC04 reads what the real meter answers it with: its input registers, the same registers as FC03 (an EM24 or a
      // DTSU666 answers both alike, and readers use either), its input registers and where it has none its holding
      // ones (an Eastron meter's identity at FC00h-FC03h, which Victron's meter library reads with FC04), or nothing
      // (illegal function, as such a device answers).
      const fc04 = this.config.model.persona?.fc04 ?? 'input';
      if (req.fc === 4 && fc04 === 'none') return encodeException(req.fc, EXCEPTION.illegalFunction);
      let table: 'holding' | 'input' = req.fc === 3 || fc04 === 'holding' ? 'holding' : 'input';
      let cluster = clusterOf(this.map, table, req.address, req.count);
      if (!cluster && req.fc === 4 && fc04 === 'input-or-holding') cluster = clusterOf(this.map, (table = 'holding'), req.address, req.count);
      if (!cluster) return encodeException(req.fc, EXCEPTION.illegalAddress);
      const from = cluster.at + req.address - cluster.start;
      return encodeRegisters(req.fc, this.snap[table].subarray(from, from + req.count));
    }
    if (req.fc !== 6 && req.fc !== 16) return encodeException(req.fc, EXCEPTION.illegalAddress);
    return this.write(req);
  }

  /** FC6/16: every register written must belong to a store or forward point, each point written whole. */
  private async write(req: Extract<ServerRequest, { fc: 6 | 16 }>): Promise<Uint8Array> {
    const values = req.fc === 6 ? [req.value] : req.values;
    const end = req.address + values.length;
    const touched = this.map.slots.filter((s) => s.table === 'holding' && s.address < end && s.address + s.width > req.address);
    let covered = 0;
    for (const s of touched) {
      if (s.write === 'reject' || s.address < req.address || s.address + s.width > end) return encodeException(req.fc, EXCEPTION.illegalAddress);
      covered += s.width;
    }
    if (touched.length === 0 || covered !== values.length) return encodeException(req.fc, EXCEPTION.illegalAddress);
    for (const s of touched.filter((t) => t.write === 'forward')) {
      const words = values.slice(s.address - req.address, s.address - req.address + s.width);
      try {
        await this.forward(s, words);
      } catch (err) {
        return encodeException(req.fc, exceptionFor(err));
      }
    }
    for (const s of touched.filter((t) => t.write === 'store')) this.stored.set(s.name, values.slice(s.address - req.address, s.address - req.address + s.width));
    this.snap = this.build();
    return encodeWriteAnswer(req);
  }

  /** A forwarded write: the words as the model reads them, back through the binding, to the source device. */
  private async forward(slot: Slot, words: number[]): Promise<void> {
    const { io } = this.deps;
    if (!io) throw new Error('no write pipeline');
    const raw = decodeRegisters(slot.block, words, 0);
    const meaning = slot.point.values ? slot.point.values[String(raw)] : undefined;
    const value = meaning ?? (typeof raw === 'number' ? raw * (slot.point.scale ?? 1) + (slot.point.offset ?? 0) : raw);
    const source = slot.binding!.sources[0]!;
    await io.writePoints(source.device, [{ name: source.point, value: typeof value === 'number' ? value / slot.binding!.scale / (source.factor ?? 1) : value }]);
  }

  /** The value of a slot now, in engineering units, or null. */
  private value(slot: Slot): number | string | null {
    const b = slot.binding;
    if (!b) return null;
    if (b.constant !== undefined) return b.constant;
    let sum = 0;
    for (const s of b.sources) {
      let v: unknown;
      try { v = this.deps.shadow.GetExactPoint(s.device, s.point); } catch { return null; }
      if (typeof v !== 'number') return b.sources.length === 1 && typeof v === 'string' ? v : null;
      sum += v * (s.factor ?? 1);
    }
    return sum * b.scale;
  }

  private build(): Snapshot {
    const snap: Snapshot = { input: this.map.blank.input.slice(), holding: this.map.blank.holding.slice() };
    const scaleFactors = new Map<string, number>();
    for (const slot of this.map.slots) {
      const v = this.value(slot);
      if (typeof v === 'number') scaleFactors.set(slot.name, v);
    }
    for (const slot of this.map.slots) {
      const cluster = clusterOf(this.map, slot.table, slot.address, slot.width)!;
      let words: readonly number[] | null = this.stored.get(slot.name) ?? null;
      if (!words) {
        const v = this.value(slot);
        const sfName = slot.point.scale_factor;
        const sf = sfName === undefined ? 0 : scaleFactors.get(sfName);
        words = v === null || sf === undefined ? null : valueWords(slot, v, sf);
      }
      snap[slot.table].set(words ?? slot.missing, cluster.at + slot.address - cluster.start);
    }
    this.rebuilds++;
    return snap;
  }
}
