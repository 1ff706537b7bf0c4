/**
 * Turns one write batch into wire requests: every value is encoded first (a value that does not fit
 * throws INVALID_VALUE and nothing is sent), then contiguous coils go out as one FC15 and contiguous
 * holding registers as one FC16; a lone coil is FC05 and a lone register FC06. Bits inside a
 * register are read-modify-write (FC03 + FC06) in the same bus slot, so no poll sneaks in between.
 */
import { invalidValue } from '../../core/errors.js';
import { applyBit, encodeBit, encodeRegisters, type RawPointValue } from '../../protocol/modbus/codec.js';
import type { ModbusPoint, WriteOptions } from './device-plan.js';
import type { BusIo } from './bus-owner.js';
import type { WireRequest } from './transport.js';

/** Spec limits for one write request: FC15 1968 coils, FC16 123 registers. */
const MAX_WRITE_COILS = 1968;
export const DEFAULT_WRITE: WriteOptions = { singleAsFc16: false, maxRegisters: 123 };

/** One register write the way the device takes it: FC06, or FC16 with one register (DDS238-2, iEM3000). */
const oneRegister = (address: number, value: number, options: WriteOptions): WireRequest =>
  options.singleAsFc16 ? { fc: 16, address, values: [value] } : { fc: 6, address, value };

export type WriteOp =
  | { kind: 'wire'; req: WireRequest }
  | { kind: 'bits'; address: number; bits: { point: ModbusPoint; value: number }[] };

interface Chunk<T> { address: number; values: T[] }

/** Adjacent runs (each item: address and its words/bits), split so no run exceeds `max` and no item is cut. */
function runs<T>(items: { address: number; values: T[] }[], max: number): Chunk<T>[] {
  const sorted = [...items].sort((a, b) => a.address - b.address);
  const out: Chunk<T>[] = [];
  for (const item of sorted) {
    const last = out[out.length - 1];
    if (last && last.address + last.values.length === item.address && last.values.length + item.values.length <= max) {
      last.values.push(...item.values);
    } else {
      out.push({ address: item.address, values: [...item.values] });
    }
  }
  return out;
}

export function planWrites(writes: readonly { point: ModbusPoint; value: RawPointValue }[], options: WriteOptions = DEFAULT_WRITE): WriteOp[] {
  const coils = new Map<number, boolean>();
  const words = new Map<number, { address: number; values: number[] }>();
  const bits = new Map<number, { point: ModbusPoint; value: number }[]>();
  for (const { point, value } of writes) {
    const b = point.block;
    if (b.table === 'coil') {
      coils.set(b.address, encodeBit(value, point.name));
    } else if (b.table !== 'holding') {
      throw invalidValue(`point ${point.name} is in the ${b.table} table, which cannot be written`);
    } else if (b.bit !== undefined) {
      const [bit] = encodeRegisters(b, value, point.name);
      const list = bits.get(b.address) ?? [];
      list.push({ point, value: bit! });
      bits.set(b.address, list);
    } else {
      for (const w of words.values()) {
        const overlaps = b.address < w.address + w.values.length && w.address < b.address + point.width;
        if (overlaps) throw invalidValue(`point ${point.name} overlaps another point written in the same batch`);
      }
      const encoded = encodeRegisters(b, value, point.name);
      if (encoded.length > options.maxRegisters) throw invalidValue(`point ${point.name} needs ${encoded.length} registers; the device takes at most ${options.maxRegisters} per write`);
      words.set(b.address, { address: b.address, values: encoded });
    }
  }
  const ops: WriteOp[] = [];
  for (const run of runs([...coils].map(([address, v]) => ({ address, values: [v] })), MAX_WRITE_COILS)) {
    ops.push({ kind: 'wire', req: run.values.length === 1 ? { fc: 5, address: run.address, value: run.values[0]! } : { fc: 15, address: run.address, values: run.values } });
  }
  for (const run of runs([...words.values()], Math.min(options.maxRegisters, 123))) {
    ops.push({ kind: 'wire', req: run.values.length === 1 ? oneRegister(run.address, run.values[0]!, options) : { fc: 16, address: run.address, values: run.values } });
  }
  for (const [address, list] of [...bits].sort((a, b) => a[0] - b[0])) ops.push({ kind: 'bits', address, bits: list });
  return ops;
}

/** Runs the ops in order inside one bus slot; the first failure stops the batch and is thrown. */
export async function executeWrites(io: BusIo, unit: number, ops: readonly WriteOp[], retries = 0, options: WriteOptions = DEFAULT_WRITE): Promise<void> {
  for (const op of ops) {
    if (op.kind === 'wire') {
      await io.request(unit, op.req, retries); // absolute values: repeating a write is safe
      continue;
    }
    const [current] = (await io.request(unit, { fc: 3, address: op.address, count: 1 }, retries)) as number[];
    let word = current ?? 0;
    for (const { point, value } of op.bits) word = applyBit(word, point.block, value);
    await io.request(unit, oneRegister(op.address, word, options));
  }
}
