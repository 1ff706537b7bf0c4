/**
 * A unit for a device that has no Modbus registers of its own (GPIO lines, simulator, …): a register map
 * generated from its model, served from the shadow. In model order, each point gets the next address of
 * its table: an on/off point (a GPIO line) one coil (RW) or discrete input (R); an int point two registers
 * (int32) and a float point two registers (float32) in holding (RW) or input (R) registers, high word first.
 * String and write-only points are left out. A value the shadow does not hold (device offline, older than
 * its ttl) is exception 0x0B, an address the map does not have 0x02; coils are written through the
 * gateway's write pipeline (FC 5 and 15), registers are read-only here (0x01).
 */
import { isGpioLevel } from '../../config/on-off.js';
import type { ModelConfig, PointConfig } from '../../config/types.js';
import type { DeviceIO } from '../../core/io.js';
import type { Value } from '../../core/types.js';
import type { RawRequest } from '../../drivers/types.js';
import { EXCEPTION } from '../../protocol/modbus/pdu.js';

type Table = 'coil' | 'discrete' | 'holding' | 'input';

export interface MapEntry {
  point: string;
  table: Table;
  address: number;
  kind: 'bit' | 'int32' | 'float32';
}

/** An exception the generated unit answers; the handler turns it into the PDU. */
export class UnitException extends Error {
  constructor(readonly exception: number) {
    super(`modbus exception ${exception}`);
  }
}

export function generateMap(model: ModelConfig): MapEntry[] {
  const next: Record<Table, number> = { coil: 0, discrete: 0, holding: 0, input: 0 };
  const out: MapEntry[] = [];
  const add = (p: PointConfig, table: Table, kind: MapEntry['kind']): void => {
    out.push({ point: p.name, table, address: next[table], kind });
    next[table] += kind === 'bit' ? 1 : 2;
  };
  for (const p of model.points) {
    if (p.access === 'W' || p.type === 'string') continue;
    if (isGpioLevel(p)) add(p, p.access === 'RW' ? 'coil' : 'discrete', 'bit');
    else add(p, p.access === 'RW' ? 'holding' : 'input', p.type === 'int' ? 'int32' : 'float32');
  }
  return out;
}

const TABLE: Record<number, Table> = { 1: 'coil', 2: 'discrete', 3: 'holding', 4: 'input' };

function words(kind: 'int32' | 'float32', value: number): [number, number] {
  const view = new DataView(new ArrayBuffer(4));
  if (kind === 'float32') view.setFloat32(0, value);
  else view.setInt32(0, Math.max(-0x80000000, Math.min(0x7fffffff, Math.round(value))));
  return [view.getUint16(0), view.getUint16(2)];
}

export interface GeneratedUnitParts {
  deviceId: string;
  map: readonly MapEntry[];
  value(deviceId: string, point: string): Value | null;
  io: DeviceIO;
}

export class GeneratedUnit {
  constructor(private readonly parts: GeneratedUnitParts) {}

  read(req: Extract<RawRequest, { count: number }>): number[] | boolean[] {
    const table = TABLE[req.fc]!;
    const bits = table === 'coil' || table === 'discrete';
    const out: (number | boolean)[] = [];
    for (let a = req.address; a < req.address + req.count;) {
      const e = this.parts.map.find((m) => m.table === table && a >= m.address && a < m.address + (m.kind === 'bit' ? 1 : 2));
      if (!e) throw new UnitException(EXCEPTION.illegalAddress);
      const v = this.parts.value(this.parts.deviceId, e.point);
      if (v === null || typeof v === 'string') throw new UnitException(EXCEPTION.targetFailed);
      const n = typeof v === 'boolean' ? Number(v) : v;
      if (bits) {
        out.push(n !== 0);
        a++;
        continue;
      }
      const w = words(e.kind as 'int32' | 'float32', n);
      for (let i = a - e.address; i < 2 && a < req.address + req.count; i++, a++) out.push(w[i]!);
    }
    return out as number[] | boolean[];
  }

  async write(req: Exclude<RawRequest, { count: number }>): Promise<void> {
    if (req.fc !== 5 && req.fc !== 15) throw new UnitException(EXCEPTION.illegalFunction);
    const values = req.fc === 5 ? [req.value] : req.values;
    const writes = values.map((on, i) => {
      const e = this.parts.map.find((m) => m.table === 'coil' && m.address === req.address + i);
      if (!e) throw new UnitException(EXCEPTION.illegalAddress);
      return { name: e.point, value: on ? 1 : 0 };
    });
    await this.parts.io.writePoints(this.parts.deviceId, writes);
  }
}
