/**
 * The bus side of the Modbus server: raw reads and writes of a device, through the bus's one owner. A read
 * is served from the raw image when every register is young enough and of one poll cycle (no frame); a
 * miss is one job on the owner's queue at on-demand priority — so polls keep their share — split at the
 * device's request limit inside that one job (no poll between the parts, the answer reassembled bit-exactly)
 * and shared by every miss in flight whose range it covers. A backed-off unit fails at once. A write goes
 * out once (no retry after a timeout: the device may have taken it), invalidates the overlapping image,
 * and the written points are read back into the shadow.
 */
import type { Clock } from '../../core/clock.js';
import { GatewayError, unknownDevice } from '../../core/errors.js';
import type { ModbusTable } from '../../protocol/modbus/address.js';
import type { DataSink, RawModbusAccess, RawRequest, RawValue } from '../types.js';
import { PRIORITY, type BusIo, type BusOwner } from './bus-owner.js';
import type { CompiledDevice, ModbusPoint } from './device-plan.js';
import type { RawImage } from './raw-image.js';

const TABLE: Record<number, ModbusTable> = { 1: 'coil', 2: 'discrete', 3: 'holding', 4: 'input', 5: 'coil', 6: 'holding', 15: 'coil', 16: 'holding' };
/** Spec limits per read (Modbus Application Protocol §6.1-6.4). */
const MAX_BITS = 2000;
const MAX_REGISTERS = 125;

interface Inflight {
  unit: number;
  table: ModbusTable;
  address: number;
  count: number;
  done: Promise<number[] | boolean[]>;
}

export interface RawAccessParts {
  owner: BusOwner;
  image: RawImage;
  clock: Clock;
  sink: DataSink;
  retries: number;
  device(id: string): CompiledDevice | undefined;
  /** Throws UNIT_BACKED_OFF while the device's backoff lasts. */
  guard(d: CompiledDevice): void;
  /** `run` noting its answer or failure in the device's health before the bus takes its next job (driver.ts). */
  atLine<T>(d: CompiledDevice, run: (io: BusIo) => Promise<T>): (io: BusIo) => Promise<T>;
  readPoints(d: CompiledDevice, points: readonly ModbusPoint[]): Promise<Record<string, RawValue>>;
}

export function createRawAccess(parts: RawAccessParts): RawModbusAccess {
  const { owner, image, clock } = parts;
  const inflight = new Set<Inflight>();
  const get = (id: string): CompiledDevice => parts.device(id) ?? (() => { throw unknownDevice(); })();
  /**
   * A dead unit is not probed by clients at all: the poller's probe (once per backoff period) finds it back.
   * Otherwise every client request after each backoff would be a probe of its own, a timeout each.
   */
  const guard = (d: CompiledDevice): void => {
    parts.guard(d);
    if (d.health.degraded) throw new GatewayError('UNIT_BACKED_OFF', `unit ${d.unit} (${d.id}) is not answering; the gateway probes it in the background`);
  };

  const fetch = (d: CompiledDevice, table: ModbusTable, req: Extract<RawRequest, { count: number }>): Promise<number[] | boolean[]> => {
    const bits = table === 'coil' || table === 'discrete';
    const limit = bits ? Math.min(d.planOptions.maxBits ?? MAX_BITS, MAX_BITS) : Math.min(d.planOptions.maxRegisters ?? MAX_REGISTERS, MAX_REGISTERS);
    const retries = d.health.suspect ? 0 : parts.retries;
    const read = parts.atLine(d, async (io) => {
      const out: (number | boolean)[] = [];
      for (let a = req.address; a < req.address + req.count; a += limit) {
        const count = Math.min(limit, req.address + req.count - a);
        const data = (await io.request(d.unit, { fc: req.fc, address: a, count }, retries)) as (number | boolean)[];
        for (let i = 0; i < count; i++) out.push(data[i]!);
      }
      return out as number[] | boolean[];
    });
    return owner.enqueue(PRIORITY.read, (io) => {
      guard(d); // again on the line: the unit may have been backed off while this waited
      return read(io);
    });
  };

  return {
    has: (id) => parts.device(id) !== undefined,

    peek(id, req, maxAgeMs) {
      const d = get(id);
      return image.get(d.unit, TABLE[req.fc]!, req.address, req.count, clock.mono() - maxAgeMs);
    },

    async read(id, req, maxAgeMs) {
      const d = get(id);
      const table = TABLE[req.fc]!;
      const hit = image.get(d.unit, table, req.address, req.count, clock.mono() - maxAgeMs);
      if (hit) return { data: hit, hit: true };
      guard(d);
      const end = req.address + req.count;
      let job = [...inflight].find((f) => f.unit === d.unit && f.table === table && f.address <= req.address && f.address + f.count >= end);
      if (!job) {
        const started: Inflight = { unit: d.unit, table, address: req.address, count: req.count, done: fetch(d, table, req) };
        inflight.add(started);
        void started.done.finally(() => inflight.delete(started)).catch(() => {});
        job = started;
      }
      const data = await job.done;
      const from = req.address - job.address;
      return { data: data.slice(from, from + req.count) as number[] | boolean[], hit: false };
    },

    async write(id, req) {
      const d = get(id);
      guard(d);
      const table = TABLE[req.fc]!;
      const count = 'values' in req ? req.values.length : 1;
      image.invalidate(d.unit, table, req.address, count);
      try {
        const write = parts.atLine(d, (io) => io.request(d.unit, req, 0));
        await owner.enqueue(PRIORITY.write, (io) => {
          guard(d);
          return write(io);
        });
      } finally {
        // Also after a timeout: the device may have taken the write.
        image.invalidate(d.unit, table, req.address, count);
      }
      const touched = [...d.points.values()].filter((p) => p.block.table === table && p.access !== 'W' && !p.sunspec
        && p.block.address < req.address + count && req.address < p.block.address + p.width);
      if (touched.length > 0) {
        void parts.readPoints(d, touched).then((values) => parts.sink.data(d.id, values), (err: unknown) => parts.sink.failure(d.id, err instanceof Error ? err : new Error(String(err))));
      }
    },

    state(id) {
      const d = get(id);
      const newest = image.newest(d.unit);
      return { online: !d.health.degraded, ageMs: newest === null ? null : clock.mono() - newest };
    },
  };
}
