/**
 * Read planner: turns a device's points (one table, one poll interval) into the read requests of
 * least total wire time under a CostModel, bridging a gap when reading the unused registers costs
 * less than starting another request, never over the register/bit cap.
 *
 * Exact for the model: points are sorted by address and every request covers a run of consecutive
 * points (a cheaper plan never interleaves two requests), so a dynamic programme over the sorted
 * points finds the optimum. With n points and a cap of k registers it does O(n·k) work — a few
 * thousand steps for a real meter — and runs once per configuration, never per poll.
 */
import type { ModbusTable } from './address.js';
import { isBitTable } from './codec.js';
import { requestCostMs, type CostModel } from './wire-cost.js';

/** Modbus limits per request (spec §6.1–6.4): 125 registers for FC3/FC4, 2000 bits for FC1/FC2. */
export const MAX_READ_REGISTERS = 125;
export const MAX_READ_BITS = 2000;

export interface PlanPoint<T = unknown> {
  table: ModbusTable;
  address: number;
  /** Registers (or bits) the point occupies. */
  width: number;
  /** Carried through untouched (the driver's point record). */
  ref: T;
}

export interface ReadRequest<T = unknown> {
  table: ModbusTable;
  address: number;
  count: number;
  points: PlanPoint<T>[];
}

export interface PlanOptions {
  cost: CostModel;
  /** Register cap (bus and device cap already combined); bits are capped at 2000 separately. */
  maxRegisters?: number;
  maxBits?: number;
  /** 'auto': bridge whenever it is cheaper. A number: also never bridge a gap longer than this. 0 = contiguous only. */
  maxGap?: 'auto' | number;
}

export class PlanError extends Error {}

/** Cap for a table under the options. */
export function capFor(table: ModbusTable, options: PlanOptions): number {
  return isBitTable(table)
    ? Math.min(options.maxBits ?? MAX_READ_BITS, MAX_READ_BITS)
    : Math.min(options.maxRegisters ?? MAX_READ_REGISTERS, MAX_READ_REGISTERS);
}

/** Plans every table in `points` separately (a request never crosses tables). */
export function planReads<T>(points: readonly PlanPoint<T>[], options: PlanOptions): ReadRequest<T>[] {
  const byTable = new Map<ModbusTable, PlanPoint<T>[]>();
  for (const p of points) {
    const list = byTable.get(p.table) ?? [];
    list.push(p);
    byTable.set(p.table, list);
  }
  const out: ReadRequest<T>[] = [];
  for (const [table, list] of byTable) out.push(...planTable(table, list, options));
  return out;
}

function planTable<T>(table: ModbusTable, unsorted: PlanPoint<T>[], options: PlanOptions): ReadRequest<T>[] {
  const cap = capFor(table, options);
  const maxGap = options.maxGap === undefined || options.maxGap === 'auto' ? Infinity : options.maxGap;
  const pts = [...unsorted].sort((a, b) => a.address - b.address || a.width - b.width);
  for (const p of pts) {
    if (p.width > cap) throw new PlanError(`a point of ${p.width} ${isBitTable(table) ? 'bits' : 'registers'} at ${table} ${p.address} exceeds the cap of ${cap} per request`);
    if (p.address + p.width > 65536) throw new PlanError(`a point at ${table} ${p.address} runs past address 65535`);
  }
  const n = pts.length;
  // best[i]: least cost of reading pts[0..i); from[i]: where the last request of that plan starts.
  const best = new Float64Array(n + 1).fill(Infinity);
  const from = new Int32Array(n + 1);
  best[0] = 0;
  for (let j = 1; j <= n; j++) {
    // Last request covers pts[i..j): walk i down while the span fits the cap and gaps are allowed.
    let end = 0;
    for (let i = j - 1; i >= 0; i--) {
      const p = pts[i]!;
      end = Math.max(end, p.address + p.width);
      const span = end - p.address;
      if (span > cap) break;
      if (i < j - 1) {
        // Gap between this point and the next one in the run (overlaps count as no gap).
        const next = pts[i + 1]!;
        if (next.address - (p.address + p.width) > maxGap) break;
      }
      const cost = best[i]! + requestCostMs(options.cost, table, span);
      if (cost < best[j]!) {
        best[j] = cost;
        from[j] = i;
      }
    }
  }
  const requests: ReadRequest<T>[] = [];
  for (let j = n; j > 0; j = from[j]!) {
    const run = pts.slice(from[j]!, j);
    const address = run[0]!.address;
    const end = Math.max(...run.map((p) => p.address + p.width));
    requests.push({ table, address, count: end - address, points: run });
  }
  return requests.reverse();
}

/** Total modelled wire time of a plan, ms. */
export const planCostMs = (plan: readonly ReadRequest[], cost: CostModel): number =>
  plan.reduce((sum, r) => sum + requestCostMs(cost, r.table, r.count), 0);
