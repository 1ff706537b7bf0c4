/**
 * The raw register image of one bus: what each planned poll read returned, as the device sent it (16-bit
 * registers, or bits), with the read's monotonic time and its poll cycle. The Modbus server ("front door")
 * answers from it bit-identically: no decode, no scale, no re-encode. A range is served only when every
 * register in it is younger than the asked age and all come from one poll cycle, so a value and its scale
 * factor (or the two halves of a float) are never taken from two different reads of the device.
 *
 * Segments are keyed by the planned read (unit, table, address, count) and reuse their typed array every
 * cycle; their total is capped at the capacity the driver sizes from its devices' plans, so the image
 * cannot grow past what the config polls (a segment over the cap is counted and not kept).
 */
import type { ModbusTable } from '../../protocol/modbus/address.js';

interface Segment {
  address: number;
  count: number;
  values: Uint16Array | Uint8Array;
  /** Monotonic ms of the read; -Infinity once invalidated by a write. */
  at: number;
  cycle: number;
}

const isBits = (table: ModbusTable): boolean => table === 'coil' || table === 'discrete';

export class RawImage {
  private readonly tables = new Map<string, Segment[]>();
  private registers = 0;
  /** Planned reads not kept because the image was full. */
  dropped = 0;

  constructor(private capacity: number) {}

  /** Registers (or bits) the image may hold; shrinking drops nothing already kept. */
  setCapacity(capacity: number): void {
    this.capacity = capacity;
  }

  /** Bytes held by the segments' values (the footprint: 2 B per register, 1 B per bit, plus per segment). */
  get bytes(): number {
    let n = 0;
    for (const list of this.tables.values()) for (const s of list) n += s.values.byteLength + 48;
    return n;
  }

  put(unit: number, table: ModbusTable, address: number, data: readonly (number | boolean)[], cycle: number, at: number): void {
    const key = `${unit}:${table}`;
    let list = this.tables.get(key);
    if (!list) this.tables.set(key, (list = []));
    let seg = list.find((s) => s.address === address && s.count === data.length);
    if (!seg) {
      if (this.registers + data.length > this.capacity) {
        this.dropped++;
        return;
      }
      seg = { address, count: data.length, values: isBits(table) ? new Uint8Array(data.length) : new Uint16Array(data.length), at, cycle };
      list.push(seg);
      list.sort((a, b) => a.address - b.address);
      this.registers += data.length;
    }
    for (let i = 0; i < data.length; i++) seg.values[i] = Number(data[i]);
    seg.at = at;
    seg.cycle = cycle;
  }

  /**
   * The asked range when every register of it was read at or after `notBefore`, all in one cycle; else null.
   * Overlapping segments of one cycle agree (one read each of the same device), so the first covering one wins.
   */
  get(unit: number, table: ModbusTable, address: number, count: number, notBefore: number): number[] | boolean[] | null {
    const list = this.tables.get(`${unit}:${table}`);
    if (!list) return null;
    const out: (number | boolean)[] = new Array(count);
    const bits = isBits(table);
    let cycle: number | undefined;
    let next = address;
    const end = address + count;
    while (next < end) {
      const seg = list.find((s) => s.address <= next && s.address + s.count > next && s.at >= notBefore && (cycle === undefined || s.cycle === cycle));
      if (!seg) return null;
      cycle = seg.cycle;
      const stop = Math.min(end, seg.address + seg.count);
      for (let a = next; a < stop; a++) {
        const v = seg.values[a - seg.address]!;
        out[a - address] = bits ? v === 1 : v;
      }
      next = stop;
    }
    return out as number[] | boolean[];
  }

  /** A write changed these registers: nothing overlapping them is served until read again. */
  invalidate(unit: number, table: ModbusTable, address: number, count: number): void {
    for (const s of this.tables.get(`${unit}:${table}`) ?? []) {
      if (s.address < address + count && address < s.address + s.count) s.at = -Infinity;
    }
  }

  /** Monotonic time of the newest read kept for this unit (any table), or null. */
  newest(unit: number): number | null {
    let best: number | null = null;
    for (const [key, list] of this.tables) {
      if (!key.startsWith(`${unit}:`)) continue;
      for (const s of list) if (s.at !== -Infinity && (best === null || s.at > best)) best = s.at;
    }
    return best;
  }

  clear(unit?: number): void {
    for (const key of [...this.tables.keys()]) {
      if (unit !== undefined && !key.startsWith(`${unit}:`)) continue;
      for (const s of this.tables.get(key)!) this.registers -= s.count;
      this.tables.delete(key);
    }
  }
}
