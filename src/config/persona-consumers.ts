/**
 * A persona unit against its model's known consumers (`persona.consumers`): a register a consumer reads that
 * would answer the blank pattern of a format with no "not implemented" value (the EM24's plain int32: 0x80000000
 * is −214748364.8 V to a Victron GX) is refused at load, one problem per register, naming who misreads it and as
 * what. Formats that have such a value keep answering it (NaN floats, SunSpec's sentinels, a point's declared
 * `invalid`, empty text): a consumer knows those as "no value".
 */
import { isObj } from './model-checks.js';

type Obj = Record<string, unknown>;

/** The raw value of map.ts's blank pattern per integer type (missingWords), as a consumer decodes it. */
const BLANK: Record<string, number> = {
  int16: -0x8000, uint16: 0xffff, int32: -0x80000000, uint32: 0xffffffff,
  int64: -(2 ** 63), uint64: 2 ** 64 - 1, bool: 0xffff,
};

/** True when the format says "no value" on its own, so an unbound register is read as no value. */
function hasNotImplemented(point: Obj, block: Obj, sunspec: boolean): boolean {
  if (Array.isArray(point.invalid) && point.invalid.length > 0) return true;
  const type = String(block.data_type);
  return sunspec || type === 'float32' || type === 'float64' || type === 'string' || BLANK[type] === undefined;
}

/** What a consumer decoding the point as the model does makes of the blank pattern. */
function misread(point: Obj, block: Obj): string {
  const raw = BLANK[String(block.data_type)]!;
  if (isObj(point.values)) return `as code ${raw}, which is none of its values`;
  const value = raw * (typeof point.scale === 'number' ? point.scale : 1) + (typeof point.offset === 'number' ? point.offset : 0);
  return `as ${Number(value.toPrecision(12))}${typeof point.unit === 'string' ? ` ${point.unit}` : ''} unbound`;
}

export function checkConsumerReads(unit: Obj, at: string, model: Obj, problems: string[]): void {
  const persona = isObj(model.persona) ? model.persona : {};
  const consumers = Array.isArray(persona.consumers) ? persona.consumers.filter(isObj) : [];
  if (consumers.length === 0) return;
  const constants = isObj(persona.constants) ? persona.constants : {};
  const sameAs = isObj(persona.same_as) ? persona.same_as : {};
  const bind = isObj(unit.bind) ? unit.bind : {};
  const given = (name: string): boolean => bind[name] !== undefined || constants[name] !== undefined;
  // SunSpec defines a not-implemented value for every type it uses; its chains start with the "SunS" marker constant.
  const sunspec = constants.sunspec_id === 'SunS';
  const points = new Map((Array.isArray(model.points) ? model.points : []).filter(isObj).map((p) => [String(p.name), p]));
  const readers = new Map<string, string[]>();
  for (const consumer of consumers) {
    for (const name of Array.isArray(consumer.reads) ? consumer.reads.map(String) : []) readers.set(name, [...(readers.get(name) ?? []), String(consumer.name)]);
  }
  for (const [name, who] of readers) {
    const point = points.get(name);
    const block = point && isObj(point.modbus) ? point.modbus : undefined;
    if (!point || !block || given(name)) continue;
    const twin = sameAs[name];
    if (typeof twin === 'string' && given(twin)) continue;
    if (hasNotImplemented(point, block, sunspec)) continue;
    problems.push(`${at} (persona ${String(unit.persona)}, unit ${String(unit.unit)}): ${name} is neither bound nor given a constant: ` +
      `${who.join(' and ')} ${who.length > 1 ? 'read' : 'reads'} it (${misread(point, block)})`);
  }
}
