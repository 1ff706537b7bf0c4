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
import { markerValue } from '../../core/raw-values.js';
import { DeviceHealth, type HealthOptions } from './device-health.js';

export interface ModbusPoint {
  name: string;
  block: ModbusPointBlock;
  width: number;
  access: Access;
  pollMs: number;
  /** SunSpec model ids the point may live in; block.address is the offset in that block until resolved. */
  sunspec?: number[];
  /** Where the point lives in the SunSpec float models instead (its offset there, its type there); unscaled. */
  sunspecFloat?: { models: number[]; offset: number; dataType?: ModbusPointBlock['data_type'] };
  /** The point whose raw value scales this one (the model's `scale_factor`). */
  scaleFactor?: string;
  /** A hidden point reading a placed SunSpec model's ID register: the ID it must still be. */
  sunspecCheck?: number;
  /**
   * A bit point's `invalid` markers as whole-register values: "not implemented" marks the whole register
   * (SunSpec Evt1 = 0xFFFFFFFF), so it is checked before the bit is taken out.
   */
  registerMarkers?: number[];
}

/** How the device wants writes (its model's `write` and `limits`). */
export interface WriteOptions {
  /** Send a lone register (and a bit's read-modify-write) as FC16: some meters refuse FC06. */
  singleAsFc16: boolean;
  /** Most registers in one FC16. */
  maxRegisters: number;
}

/** A SunSpec device: where to look, and what was found. */
export interface SunspecState {
  search: number[];
  /** Model id → address of its ID register; null until discovered (again). */
  models: Map<number, number> | null;
  /** The device's points before placement: every walk places from these. */
  template: Map<string, ModbusPoint>;
  /** Scale factors that are 0 by definition in the float models the device serves (reported with each poll). */
  constants: Record<string, RawPointValue>;
  /** The poller's discovery run: in flight, and when to try again (monotonic ms). */
  running: boolean;
  nextDue: number;
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
  write: WriteOptions;
  /** Present on SunSpec devices: their points are planned once the chain is walked (drivers/modbus/sunspec.ts). */
  sunspec?: SunspecState;
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

/** The narrower of two gap limits: a number beats "auto", the smaller number wins. */
function narrowGap(a: PlanOptions['maxGap'], b: 'auto' | number | undefined): PlanOptions['maxGap'] {
  if (b === undefined || b === 'auto') return a;
  return a === undefined || a === 'auto' ? b : Math.min(a, b);
}

/** The device's plan options: the bus's, narrowed by its model's documented limits and the device's own config. */
function devicePlanOptions(device: ResolvedDevice, bus: PlanOptions): PlanOptions {
  const cfg = device.config;
  const limits = device.model.limits ?? {};
  const caps = [bus.maxRegisters, cfg.max_registers, limits.max_registers].filter((n): n is number => typeof n === 'number');
  const options: PlanOptions = { ...bus, maxGap: narrowGap(narrowGap(bus.maxGap, limits.max_gap), cfg.max_gap) };
  if (caps.length > 0) options.maxRegisters = Math.min(...caps);
  if (limits.max_bits !== undefined) options.maxBits = Math.min(bus.maxBits ?? limits.max_bits, limits.max_bits);
  return options;
}

/** Poll groups (one per interval) of every point that has a wire address; problems go to `problems`. */
export function planGroups(points: Iterable<ModbusPoint>, options: PlanOptions, problems: string[]): PollGroup[] {
  const byInterval = new Map<number, ModbusPoint[]>();
  for (const p of points) {
    if (p.access === 'W' || p.sunspec) continue; // write-only points (a reset command) are never polled; SunSpec ones wait for the map
    const list = byInterval.get(p.pollMs) ?? [];
    list.push(p);
    byInterval.set(p.pollMs, list);
  }
  const groups: PollGroup[] = [];
  for (const [intervalMs, list] of [...byInterval].sort((a, b) => a[0] - b[0])) {
    try {
      groups.push({ intervalMs, points: list, requests: planGroup(list, options, 0), level: 0, nextDue: 0, running: false, lastCycleMs: null });
    } catch (err) {
      problems.push((err as Error).message);
    }
  }
  return groups;
}

export function compileDevice(device: ResolvedDevice, busOptions: PlanOptions, health: HealthOptions): CompiledDevice {
  const cfg = device.config;
  const problems: string[] = [];
  const unit = cfg.unit_id ?? 1;
  if (!Number.isInteger(unit) || unit < 0 || unit > 255) problems.push(`unit_id ${String(unit)} is out of range (1..247 on RS-485)`);
  const planOptions = devicePlanOptions(device, busOptions);
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
    const point: ModbusPoint = { name: p.name, block, width: pointWidth(block), access: p.access, pollMs: p.poll ?? cfg.poll };
    const sunspec = p.modbus.sunspec_model;
    if (sunspec !== undefined && device.model.sunspec) {
      point.sunspec = Array.isArray(sunspec) ? sunspec : [sunspec];
      const alt = p.modbus.sunspec_float;
      if (alt) point.sunspecFloat = { models: alt.sunspec_model, offset: alt.address, ...(alt.data_type ? { dataType: alt.data_type } : {}) };
    }
    if (p.scale_factor !== undefined) point.scaleFactor = p.scale_factor;
    if (block.bit !== undefined && p.invalid?.length) point.registerMarkers = p.invalid.map((m) => markerValue(m.raw, block.data_type));
    points.set(p.name, point);
  }
  const write: WriteOptions = {
    singleAsFc16: device.model.write?.single_register === 'fc16',
    maxRegisters: Math.min(device.model.limits?.max_write_registers ?? 123, 123),
  };
  const compiled: CompiledDevice = {
    id: cfg.id, unit, points, groups: planGroups(points.values(), planOptions, problems), planOptions, write,
    health: new DeviceHealth(health), problems, counters: { polls: 0, failures: 0 },
  };
  if (device.model.sunspec) compiled.sunspec = { search: device.model.sunspec.search, models: null, template: new Map(points), constants: {}, running: false, nextDue: 0 };
  return compiled;
}

/** Values of every point of a request from the words/bits that came back. */
export function decodeResponse(request: ReadRequest<ModbusPoint>, data: readonly (number | boolean)[]): Record<string, RawPointValue> {
  const values: Record<string, RawPointValue> = {};
  for (const { ref: p } of request.points) {
    const offset = p.block.address - request.address;
    if (isBitTable(p.block.table)) {
      values[p.name] = decodeBit(data[offset] ?? false);
      continue;
    }
    if (p.registerMarkers) {
      // The whole register, when it is a marker, goes up as it is: the point's `invalid` list names its reason.
      const { bit: _bit, bits: _bits, ...whole } = p.block;
      const raw = decodeRegisters(whole, data as readonly number[], offset);
      if (p.registerMarkers.includes(raw as number)) {
        values[p.name] = raw;
        continue;
      }
    }
    values[p.name] = decodeRegisters(p.block, data as readonly number[], offset);
  }
  return values;
}
