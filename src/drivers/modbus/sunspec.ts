/**
 * SunSpec discovery. A SunSpec device (most solar inverters: Fronius, SMA, SolarEdge, Huawei, Kostal) puts
 * "SunS" at one of a few holding addresses (40000 is usual, 0 and 50000 occur), then a chain of models, each
 * an ID register, a length L and L registers; the chain ends with ID 0xFFFF. Where a model sits depends on
 * the models before it (model 1 is 65 or 66 registers long), so a point is written as (model, offset) and
 * placed once the chain is walked: before the device's first poll, and again whenever the link re-opens or
 * a poll finds another model ID where a placed model began (a firmware update, an inverter switched between
 * the integer models 101-103 and the float models 111-113): old addresses would read plausible wrong numbers.
 */
import { GatewayError, isGatewayError } from '../../core/errors.js';
import type { ReadRequest } from '../../protocol/modbus/planner.js';
import { pointWidth, type RawPointValue } from '../../protocol/modbus/codec.js';
import { planGroups, type CompiledDevice, type ModbusPoint } from './device-plan.js';

/** "SunS" as two big-endian registers. */
const MARKER = [0x5375, 0x6e53] as const;
/** A chain longer than this is taken for garbage rather than walked to the end of the address space. */
const MAX_MODELS = 64;

export type ReadHolding = (address: number, count: number) => Promise<number[]>;

/** Model id → address of its ID register, first occurrence of each id. Throws when no marker answers. */
export async function walkSunspec(read: ReadHolding, search: readonly number[]): Promise<Map<number, number>> {
  let base: number | undefined;
  for (const address of search) {
    try {
      const words = await read(address, 2);
      if (words[0] === MARKER[0] && words[1] === MARKER[1]) {
        base = address;
        break;
      }
    } catch (err) {
      // "Illegal data address" at a candidate is an answer: look at the next one. Silence is the device's failure.
      if (!(isGatewayError(err) && err.code === 'MODBUS_EXCEPTION')) throw err;
    }
  }
  if (base === undefined) throw new GatewayError('SUNSPEC_NOT_FOUND', `no SunSpec marker "SunS" at holding ${search.join(', ')}`);
  const models = new Map<number, number>();
  let address = base + 2;
  // ID and L are read apart, as pysunspec2 does: some devices serve the 0xFFFF end marker without a length
  // after it, and a 2-register read there gets "illegal data address" for the whole chain.
  for (let i = 0; i < MAX_MODELS && address <= 65535; i++) {
    const id = await chainWord(read, address, models.size);
    if (id === undefined || id === 0xffff || id === 0) break;
    const length = address + 1 <= 65535 ? await chainWord(read, address + 1, models.size) : undefined;
    if (length === undefined) break;
    if (!models.has(id)) models.set(id, address);
    address += 2 + length;
  }
  return models;
}

/**
 * One register of the chain. An exception after at least one model is the chain's end (a device that has no
 * register where the next ID would be); before any, it is the device's answer to a broken map.
 */
async function chainWord(read: ReadHolding, address: number, found: number): Promise<number | undefined> {
  try {
    return (await read(address, 1))[0];
  } catch (err) {
    if (found > 0 && isGatewayError(err) && err.code === 'MODBUS_EXCEPTION') return undefined;
    throw err;
  }
}

/** Where a point lands in the device's chain: its placed copy, and whether a float model took it. */
function place(p: ModbusPoint, models: ReadonlyMap<number, number>): { point: ModbusPoint; id: number; float: boolean } | null {
  const { sunspec: ids = [], sunspecFloat: alt, ...rest } = p;
  const id = ids.find((m) => models.has(m));
  if (id !== undefined) return { point: { ...rest, block: { ...p.block, address: models.get(id)! + p.block.address } }, id, float: false };
  const floatId = alt?.models.find((m) => models.has(m));
  if (alt === undefined || floatId === undefined) return null;
  const block = { ...p.block, address: models.get(floatId)! + alt.offset, data_type: alt.dataType ?? p.block.data_type };
  return { point: { ...rest, block, width: pointWidth(block) }, id: floatId, float: true };
}

/** The hidden point that reads a placed model's ID register with every poll of `pollMs`. */
const checkPoint = (id: number, address: number, pollMs: number): ModbusPoint => ({
  name: `@sunspec:${id}:${pollMs}`, access: 'R', pollMs, width: 1, sunspecCheck: id,
  block: { table: 'holding', address, data_type: 'uint16', word_order: 'big', byte_order: 'big' },
});

/**
 * Gives every SunSpec point its wire address (the block's ID address + its offset) from the first of its
 * model ids that the device has, or from its float placement (`sunspec_float`) when the device serves a float
 * model instead, and plans the device's polls again, each poll group reading the ID register of every model
 * it uses. Returns the points left out. Always starts from the unplaced points: it may run again.
 */
export function placeSunspecPoints(device: CompiledDevice, models: ReadonlyMap<number, number>): string[] {
  const state = device.sunspec;
  const template = state?.template ?? device.points;
  const points = new Map<string, ModbusPoint>();
  const missing: string[] = [];
  const unscaled = new Set<string>();
  const checks = new Map<string, ModbusPoint>();
  for (const [name, p] of template) {
    if (!p.sunspec) {
      points.set(name, p);
      continue;
    }
    const placed = place(p, models);
    if (!placed) {
      missing.push(name);
      continue;
    }
    points.set(name, placed.point);
    if (placed.float && p.scaleFactor) unscaled.add(p.scaleFactor);
    const key = `@sunspec:${placed.id}:${p.pollMs}`;
    if (p.access !== 'W' && !checks.has(key)) checks.set(key, checkPoint(placed.id, models.get(placed.id)!, p.pollMs));
  }
  // A float model carries its values unscaled: their scale factor is 0 there (value = raw x 10^0), not "unknown".
  const constants: Record<string, RawPointValue> = {};
  for (const sf of unscaled) {
    if (points.has(sf)) continue;
    constants[sf] = 0;
    missing.splice(missing.indexOf(sf), 1);
  }
  for (const [key, check] of checks) points.set(key, check);
  device.points = points;
  if (state) {
    state.models = new Map(models);
    state.constants = constants;
  }
  const problems: string[] = [];
  device.groups = planGroups(device.points.values(), device.planOptions, problems);
  for (const problem of problems) if (!device.problems.includes(problem)) device.problems.push(problem);
  return missing;
}

/** Forgets the map: the device's points wait for the next walk, nothing of it is polled meanwhile. */
export function unplaceSunspec(device: CompiledDevice): void {
  const state = device.sunspec;
  if (!state || state.models === null) return;
  state.models = null;
  state.constants = {};
  state.nextDue = 0;
  device.points = new Map(state.template);
  device.groups = [];
}

/**
 * Whether every model ID a request read is still the one placed there; takes the hidden ID values out of
 * `values`. False: the chain moved under the map, and the request's values are not the points'.
 */
export function chainHolds(request: ReadRequest<ModbusPoint>, values: Record<string, RawPointValue>): boolean {
  let holds = true;
  for (const { ref } of request.points) {
    if (ref.sunspecCheck === undefined) continue;
    if (values[ref.name] !== ref.sunspecCheck) holds = false;
    delete values[ref.name];
  }
  return holds;
}

/** Whether a point still waits for the SunSpec map (its address is only an offset). */
export const awaitingSunspec = (device: CompiledDevice): boolean => device.sunspec !== undefined && device.sunspec.models === null;
