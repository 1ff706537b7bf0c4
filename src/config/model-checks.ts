/**
 * Checks inside one model that JSON Schema cannot express: unique point names, exactly one driver block,
 * Modbus data type vs point type, reference-notation addresses (converted to 0-based numbers here, in place).
 */
import { parseHexAddress, parseReference } from '../protocol/modbus/address.js';
import { blockProblems } from '../protocol/modbus/block-check.js';
import type { ModbusBlock } from '../protocol/modbus/types.js';

/** Driver block keys of a point, in the order they are reported. */
export const DRIVER_BLOCKS = ['modbus', 'gpio', 'sim'] as const;
export type DriverBlock = (typeof DRIVER_BLOCKS)[number];

type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `at('points[0].type')` → the full problem path for this model (inline `models.x.…` or `board/models/x.json: …`). */
export type At = (relative: string) => string;

function checkModbusBlock(point: Obj, block: Obj, at: (key: string) => string, problems: string[]): void {
  // Text that is not even shaped like a reference is the schema's `pattern` problem; reported once, there.
  if (typeof block.address === 'string' && /^[0134]\d{4,5}$/.test(block.address)) {
    const ref = parseReference(block.address);
    if (typeof ref === 'string') problems.push(`${at('address')}: ${ref}`);
    else {
      if (typeof block.table === 'string' && ref.table !== block.table) {
        problems.push(`${at('address')}: reference "${block.address}" is in the ${ref.table} table but table is "${block.table}"`);
      }
      block.address = ref.address;
    }
  }
  if (typeof block.address === 'string' && parseHexAddress(block.address) !== null) block.address = parseHexAddress(block.address);
  if (typeof block.data_type !== 'string' || typeof block.table !== 'string') return;
  // A coded point (`values`) reads a number off the wire whatever the meaning's type is.
  const pointType = typeof point.type !== 'string' ? undefined : isObj(point.values) ? 'int' : point.type;
  const found = blockProblems(block as unknown as ModbusBlock, pointType);
  for (const { key, message } of found) problems.push(`${at(key)}: ${message}`);
}

function checkSimBlock(block: Obj, at: (key: string) => string, problems: string[]): void {
  if ((block.fn === 'sine' || block.fn === 'random_walk') && typeof block.min === 'number' && typeof block.max === 'number') {
    if (block.min >= block.max) problems.push(`${at('max')}: must be greater than min (${block.min})`);
  }
  if (block.fn === 'sine' && block.period === 0) problems.push(`${at('period')}: must be greater than 0`);
}

/** Problems inside one model (shape errors are the schema's; this only looks at what is well-formed enough). */
export function checkModel(model: unknown, at: At): string[] {
  const problems: string[] = [];
  if (!isObj(model) || !Array.isArray(model.points)) return problems;
  const seen = new Map<string, number>();
  model.points.forEach((point: unknown, i) => {
    if (!isObj(point)) return;
    const p = (rest: string): string => at(`points[${i}]${rest}`);
    if (typeof point.name === 'string') {
      const first = seen.get(point.name);
      if (first !== undefined) problems.push(`${p('.name')}: duplicate point name "${point.name}" (also points[${first}])`);
      else seen.set(point.name, i);
    }
    const blocks = DRIVER_BLOCKS.filter((key) => point[key] !== undefined);
    if (blocks.length !== 1) {
      const found = blocks.length ? `has ${blocks.join(' and ')}` : 'has none';
      problems.push(`${p('')}: must have exactly one driver block (modbus, gpio or sim); ${found}`);
    }
    if (point.scale === 0) problems.push(`${p('.scale')}: must not be 0 (writes divide by it)`);
    if (point.poll === 0) problems.push(`${p('.poll')}: must be greater than 0`);
    if (isObj(point.modbus)) checkModbusBlock(point, point.modbus, (key) => p(`.modbus.${key}`), problems);
    if (isObj(point.sim)) checkSimBlock(point.sim, (key) => p(`.sim.${key}`), problems);
    checkDeviceMarkers(model, point, p, problems);
  });
  checkPersona(model, seen, at, problems);
  return problems;
}

/** A persona's constants and `same_as` pairs name points of the model (a typo would serve "not implemented" silently). */
function checkPersona(model: Obj, names: ReadonlyMap<string, number>, at: At, problems: string[]): void {
  if (!isObj(model.persona)) return;
  const { constants, same_as: sameAs } = model.persona;
  for (const name of Object.keys(isObj(constants) ? constants : {})) {
    if (!names.has(name)) problems.push(`${at(`persona.constants.${name}`)}: no point named "${name}" in this model`);
  }
  for (const [name, twin] of Object.entries(isObj(sameAs) ? sameAs : {})) {
    if (!names.has(name)) problems.push(`${at(`persona.same_as.${name}`)}: no point named "${name}" in this model`);
    else if (typeof twin === 'string' && !names.has(twin)) problems.push(`${at(`persona.same_as.${name}`)}: no point named "${twin}" in this model`);
    else if (twin === name) problems.push(`${at(`persona.same_as.${name}`)}: a point cannot serve its own binding`);
  }
  for (const name of Object.keys(isObj(model.persona.also_at) ? model.persona.also_at : {})) {
    if (!names.has(name)) problems.push(`${at(`persona.also_at.${name}`)}: no point named "${name}" in this model`);
  }
  const consumers = Array.isArray(model.persona.consumers) ? model.persona.consumers : [];
  consumers.forEach((consumer, i) => {
    for (const name of isObj(consumer) && Array.isArray(consumer.reads) ? consumer.reads : []) {
      if (!names.has(String(name))) problems.push(`${at(`persona.consumers[${i}].reads`)}: no point named "${String(name)}" in this model`);
    }
  });
}

const WIDE_BITS = new Set(['int32', 'uint32']);

/** The model fields about a real device's own encodings (docs/model-fields.md) that the schema cannot tie together. */
function checkDeviceMarkers(model: Obj, point: Obj, p: (rest: string) => string, problems: string[]): void {
  const writable = point.access === 'W' || point.access === 'RW';
  const mb = isObj(point.modbus) ? point.modbus : undefined;
  if (mb && mb.bit !== undefined && typeof mb.data_type === 'string' && WIDE_BITS.has(mb.data_type) && writable) {
    problems.push(`${p('.access')}: a bit field in a 32-bit register is read-only (access "R")`);
  }
  if (mb && mb.sunspec_model !== undefined) {
    if (!isObj(model.sunspec)) problems.push(`${p('.modbus.sunspec_model')}: needs the model's "sunspec" (where to look for the "SunS" marker)`);
    if (mb.table !== 'holding') problems.push(`${p('.modbus.table')}: SunSpec points are holding registers`);
  }
  if (mb && mb.sunspec_float !== undefined && mb.sunspec_model === undefined) {
    problems.push(`${p('.modbus.sunspec_float')}: needs "sunspec_model" (the float models are the alternative to it)`);
  }
  if (isObj(point.values)) {
    const wantText = point.type === 'string';
    for (const [code, meaning] of Object.entries(point.values)) {
      if ((typeof meaning === 'string') !== wantText) {
        problems.push(`${p(`.values.${code}`)}: must be ${wantText ? 'text' : 'a number'} for a point of type "${String(point.type)}"`);
      }
    }
    if (point.scale_factor !== undefined) problems.push(`${p('.values')}: a coded point cannot also have a scale_factor`);
  }
  if (point.min !== undefined || point.max !== undefined) {
    if (point.type === 'string') problems.push(`${p('.min')}: "min" and "max" bound numbers; a string point has none`);
    else if (isObj(point.values)) problems.push(`${p('.min')}: a coded point's writes are its "values" already; drop "min" and "max"`);
    else if (typeof point.min === 'number' && typeof point.max === 'number' && point.min > point.max) problems.push(`${p('.min')}: ${point.min} is above "max" ${point.max}`);
  }
  if (typeof point.scale_factor === 'string') {
    const points = (model.points as unknown[]).filter(isObj);
    const sf = points.find((q) => q.name === point.scale_factor);
    if (!sf) problems.push(`${p('.scale_factor')}: no point named "${point.scale_factor}" in this model`);
    else if (sf === point) problems.push(`${p('.scale_factor')}: a point cannot scale itself`);
    else if ((sf.poll ?? null) !== (point.poll ?? null)) problems.push(`${p('.scale_factor')}: "${point.scale_factor}" must be polled with this point (same poll)`);
    if (writable) problems.push(`${p('.access')}: a point with a scale_factor is read-only (access "R")`);
  }
}
