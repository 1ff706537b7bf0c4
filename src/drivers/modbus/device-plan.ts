/**
 * Compiles a configured device into what the bus needs: its modbus points, and per poll interval
 * the planned read requests. Planning happens here once per configuration (and again only when a
 * device refuses a bridged read), never per poll.
 */
import type { ModbusPointBlock, ResolvedDevice } from '../../config/types.js';
import type { Access } from '../../core/types.js';
import { resolveAddress } from '../../protocol/modbus/address.js';
import { decodeBit, decodeRegisters, isBitTable, pointWidth, type RawPointValue } from '../../protocol/modbus/codec.js';
import { planReads, type PlanOptions, type ReadRequest } from '../../protocol/modbus/planner.js';
import { DeviceHealth, type HealthOptions } from './device-health.js';

export interface ModbusPoint {
  name: string;
  block: ModbusPointBlock;
  width: number;
  access: Access;
  pollMs: number;
}

/**
 * How aggressively a group merges: 0 = cost-optimal bridging, 1 = contiguous only, 2 = one request
 * per point. A device that answers "illegal data address" to a merged read (it does not implement
 * the unused registers in between) steps down a level instead of failing forever.
 */
export type MergeLevel = 0 | 1 | 2;

export interface PollGroup {
  intervalMs: number;
  points: ModbusPoint[];
  requests: ReadRequest<ModbusPoint>[];
  level: MergeLevel;
  nextDue: number;
  running: boolean;
  lastCycleMs: number | null;
}

export interface CompiledDevice {
  id: string;
  unit: number;
  points: Map<string, ModbusPoint>;
  groups: PollGroup[];
  planOptions: PlanOptions;
  health: DeviceHealth;
  /** Config problems found while compiling (points skipped); reported once at start. */
  problems: string[];
  counters: { polls: number; failures: number };
}

export function planGroup(points: readonly ModbusPoint[], options: PlanOptions, level: MergeLevel): ReadRequest<ModbusPoint>[] {
  const planPoints = points.map((p) => ({ table: p.block.table, address: p.block.address, width: p.width, ref: p }));
  if (level === 2) return planPoints.map((p) => ({ table: p.table, address: p.address, count: p.width, points: [p] }));
  return planReads(planPoints, level === 1 ? { ...options, maxGap: 0 } : options);
}

export function compileDevice(device: ResolvedDevice, busOptions: PlanOptions, health: HealthOptions): CompiledDevice {
  const cfg = device.config;
  const problems: string[] = [];
  const unit = cfg.unit_id ?? 1;
  if (!Number.isInteger(unit) || unit < 0 || unit > 255) problems.push(`unit_id ${String(unit)} is out of range (1..247 on RS-485)`);
  // The device's own limit (its model, from the manufacturer's document) and the integrator's narrowing.
  const caps = [cfg['max_registers'], device.model.limits?.max_registers].filter((n): n is number => typeof n === 'number');
  const deviceCap = caps.length > 0 ? Math.min(...caps) : undefined;
  const planOptions: PlanOptions = {
    ...busOptions,
    // The planner caps at the protocol's 125; a device may narrow the bus's cap.
    ...(deviceCap === undefined ? {} : { maxRegisters: Math.min(busOptions.maxRegisters ?? deviceCap, deviceCap) }),
  };
  const points = new Map<string, ModbusPoint>();
  for (const p of device.model.points) {
    if (!p.modbus) {
      problems.push(`point ${p.name} has no modbus block`);
      continue;
    }
    const address = resolveAddress(p.modbus.address as number | string, p.modbus.table);
    if (typeof address === 'string') {
      problems.push(`point ${p.name}: ${address}`);
      continue;
    }
    // The config was validated (schema defaults, config/model-checks.ts's block check): only the address is resolved here.
    const block: ModbusPointBlock = { ...p.modbus, address };
    points.set(p.name, { name: p.name, block, width: pointWidth(block), access: p.access, pollMs: p.poll ?? cfg.poll });
  }
  const byInterval = new Map<number, ModbusPoint[]>();
  for (const p of points.values()) {
    if (p.access === 'W') continue; // write-only points (a reset command) are never polled
    const list = byInterval.get(p.pollMs) ?? [];
    list.push(p);
    byInterval.set(p.pollMs, list);
  }
  const groups: PollGroup[] = [];
  for (const [intervalMs, list] of [...byInterval].sort((a, b) => a[0] - b[0])) {
    try {
      groups.push({ intervalMs, points: list, requests: planGroup(list, planOptions, 0), level: 0, nextDue: 0, running: false, lastCycleMs: null });
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  return { id: cfg.id, unit, points, groups, planOptions, health: new DeviceHealth(health), problems, counters: { polls: 0, failures: 0 } };
}

/** Values of every point of a request from the words/bits that came back. */
export function decodeResponse(request: ReadRequest<ModbusPoint>, data: readonly (number | boolean)[]): Record<string, RawPointValue> {
  const values: Record<string, RawPointValue> = {};
  for (const { ref: p } of request.points) {
    const offset = p.block.address - request.address;
    values[p.name] = isBitTable(p.block.table)
      ? decodeBit(data[offset] ?? false)
      : decodeRegisters(p.block, data as readonly number[], offset);
  }
  return values;
}
