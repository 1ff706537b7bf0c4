/**
 * Exact reference for the read planner, written independently of it: a dynamic programme over
 * register ADDRESSES (not over points). g[x] = least cost of reading every point that ends at or
 * before x with disjoint requests inside [0, x). A request [s, x) may start and end only where no
 * point straddles the boundary; an uncovered address may be skipped for free.
 */
import type { ModbusTable } from '../../../src/protocol/modbus/address.js';
import { requestCostMs, type CostModel } from '../../../src/protocol/modbus/wire-cost.js';

export interface RefPoint { address: number; width: number }

export function referenceCost(table: ModbusTable, points: readonly RefPoint[], cost: CostModel, cap: number, maxGap = Infinity): number {
  if (points.length === 0) return 0;
  const end = Math.max(...points.map((p) => p.address + p.width));
  const covered = new Uint8Array(end);
  const straddled = new Uint8Array(end + 1);
  for (const p of points) {
    for (let a = p.address; a < p.address + p.width; a++) covered[a] = 1;
    for (let b = p.address + 1; b < p.address + p.width; b++) straddled[b] = 1;
  }
  const g = new Float64Array(end + 1).fill(Infinity);
  g[0] = 0;
  for (let x = 1; x <= end; x++) {
    if (straddled[x]) continue;
    if (!covered[x - 1]) g[x] = g[x - 1]!;
    for (let s = x - 1; s >= 0 && x - s <= cap; s--) {
      if (straddled[s] || !covered[s]) continue; // a request starting on an unused register never pays
      // Gaps at the request's edges are not bridged; only interior gaps count against maxGap.
      if (maxGap !== Infinity && interiorGap(covered, s, x) > maxGap) continue;
      const c = g[s]! + requestCostMs(cost, table, x - s);
      if (c < g[x]!) g[x] = c;
    }
  }
  return g[end]!;
}

function interiorGap(covered: Uint8Array, s: number, x: number): number {
  let last = x - 1;
  while (last > s && !covered[last]) last--;
  let run = 0;
  let longest = 0;
  for (let a = s; a <= last; a++) {
    run = covered[a] ? 0 : run + 1;
    longest = Math.max(longest, run);
  }
  return longest;
}
