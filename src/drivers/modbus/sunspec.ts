/**
 * SunSpec discovery. A SunSpec device (most solar inverters: Fronius, SMA, SolarEdge, Huawei, Kostal) puts
 * "SunS" at one of a few holding addresses (40000 is usual, 0 and 50000 occur), then a chain of models, each
 * an ID register, a length L and L registers; the chain ends with ID 0xFFFF. Where a model sits depends on
 * the models before it (model 1 is 65 or 66 registers long), so a point is written as (model, offset) and
 * placed once the chain is walked — once per driver start, before the device's first poll.
 */
import { GatewayError, isGatewayError } from '../../core/errors.js';
import { planGroups, type CompiledDevice } from './device-plan.js';

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

/**
 * Gives every SunSpec point its wire address (the block's ID address + its offset) from the first of its
 * model ids that the device has, and plans the device's polls again. Returns the points left out.
 */
export function placeSunspecPoints(device: CompiledDevice, models: ReadonlyMap<number, number>): string[] {
  const missing: string[] = [];
  for (const [name, p] of device.points) {
    if (!p.sunspec) continue;
    const id = p.sunspec.find((m) => models.has(m));
    if (id === undefined) {
      missing.push(name);
      continue;
    }
    p.block = { ...p.block, address: models.get(id)! + p.block.address };
    delete p.sunspec;
  }
  for (const name of missing) device.points.delete(name);
  if (device.sunspec) device.sunspec.models = new Map(models);
  const problems: string[] = [];
  device.groups = planGroups(device.points.values(), device.planOptions, problems);
  device.problems.push(...problems);
  return missing;
}

/** Whether a point still waits for the SunSpec map (its address is only an offset). */
export const awaitingSunspec = (device: CompiledDevice): boolean => device.sunspec !== undefined && device.sunspec.models === null;
