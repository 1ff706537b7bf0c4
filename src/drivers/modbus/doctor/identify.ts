/**
 * Which library model a unit is: every model is scored by what the unit says about itself (its identity
 * registers, SunSpec models, Eastron's meter code) and by a few of its points read and judged as `probe`
 * judges them (core/point-report.ts: a value out of the unit's plausible range, a failed read). The score is
 * the share of checks passed, halved when an identity register answers another model's value; ties go to the
 * model whose identity matched.
 */
import type { ModbusPointBlock, ModelConfig, PointConfig } from '../../../config/types.js';
import { classifyPoints } from '../../../core/point-report.js';
import { decodeRegisters, isBitTable, pointWidth, type RawPointValue } from '../../../protocol/modbus/codec.js';
import type { ModelCandidate } from '../../../protocol/modbus/doctor-types.js';
import { EASTRON_CODES, type ReadFc, type UnitIdentity, type UnitReader } from './unit-reads.js';

/** Points read per model beyond its identity: enough to tell maps apart, few enough for 30 models in seconds. */
const SAMPLE_POINTS = 6;
/** Candidates reported per unit, and the least score one needs. */
const MAX_CANDIDATES = 5;
const MIN_SCORE = 0.5;
/** Units the plausibility rules know (core/plausibility.ts): such points tell a wrong map best. */
const JUDGED_UNITS = new Set(['V', 'Hz', 'A', 'W', 'kW', 'MW', 'VA', 'kVA', 'var', 'kvar', 'Wh', 'kWh', 'MWh', 'varh', 'kvarh', '%', '%RH', '°C']);
/**
 * Persona constants that identify a device (an id or a code the maker fixed); the others (scale factors,
 * the persona's own manufacturer text, a unit's address) say nothing about which model it is.
 */
const IDENTITY_KEY = /(^|_)(id|code)$/;
const NOT_IDENTITY = new Set(['device_address', 'unit_id', 'slave_address']);

interface Check {
  pass: boolean;
  identity: boolean;
  what: string;
  /** An identity read that answered another value than the model's: another device, whatever its points say. */
  contradicts?: boolean;
}

/**
 * A model whose identity the unit contradicts keeps this share of its score: its points may well be plausible
 * (an SDM120's voltage reads fine on an SDM630), but the code the maker fixed says it is another model.
 */
const CONTRADICTED = 0.5;

const FC_OF: Record<ModbusPointBlock['table'], ReadFc> = { coil: 1, discrete: 2, holding: 3, input: 4 };
const sunspecIds = (model: ModelConfig): number[] => [...new Set(model.points.flatMap((p) => {
  const id = p.modbus?.sunspec_model;
  return id === undefined ? [] : Array.isArray(id) ? id : [id];
}))];

type PointRead = { ok: true; value: RawPointValue } | { ok: false; why: string };

/** Reads one point (not a SunSpec-relative one) and decodes its raw value. */
async function readPoint(reader: UnitReader, point: PointConfig & { modbus: ModbusPointBlock }): Promise<PointRead> {
  const block = point.modbus;
  const got = await reader.read(FC_OF[block.table], block.address, pointWidth(block));
  if (!got.ok) return got;
  return { ok: true, value: isBitTable(block.table) ? got.data[0]! : decodeRegisters(block, got.data, 0) };
}

const hasBlock = (p: PointConfig): p is PointConfig & { modbus: ModbusPointBlock } => p.modbus !== undefined && p.modbus.sunspec_model === undefined;

async function identityChecks(reader: UnitReader, model: ModelConfig, identity: UnitIdentity): Promise<Check[]> {
  const checks: Check[] = [];
  for (const [name, expected] of Object.entries(model.persona?.constants ?? {})) {
    if (!IDENTITY_KEY.test(name) || NOT_IDENTITY.has(name)) continue;
    const point = model.points.find((p) => p.name === name);
    if (!point || !hasBlock(point)) continue;
    const got = await readPoint(reader, point);
    const pass = got.ok && String(got.value) === String(expected);
    checks.push({ pass, identity: true, contradicts: got.ok && !pass, what: pass ? `${name} is ${String(expected)}` : `${name} ${got.ok ? `is ${String(got.value)}, not ${String(expected)}` : `not read (${got.why})`}` });
  }
  if (model.name.startsWith('eastron-') && identity.eastronCode !== null) {
    const named = EASTRON_CODES[identity.eastronCode];
    const code = `0x${identity.eastronCode.toString(16).padStart(4, '0')}`;
    // The model's own constant already judged the code when it has one; an unknown code says nothing.
    if (named !== undefined && !checks.some((c) => c.what.startsWith('meter_code'))) {
      checks.push({ pass: named === model.name, identity: true, contradicts: named !== model.name, what: named === model.name ? `Eastron meter code ${code}` : `Eastron meter code ${code} is ${named}'s` });
    }
  }
  const ids = sunspecIds(model);
  if (ids.length > 0) {
    const found = identity.sunspec?.models.filter((m) => ids.includes(m)) ?? [];
    checks.push({
      pass: found.length > 0, identity: true,
      what: identity.sunspec === null ? 'no SunSpec marker' : found.length > 0 ? `SunSpec model ${found.join(', ')}` : `SunSpec models ${identity.sunspec.models.join(', ')}, none of ${ids.join(', ')}`,
    });
  }
  const text = [...Object.values(identity.deviceId ?? {}), identity.serverId ?? '', identity.sunspec?.manufacturer ?? ''].join(' ').toLowerCase();
  if (model.manufacturer && text.includes(model.manufacturer.toLowerCase())) checks.push({ pass: true, identity: true, what: `the device names ${model.manufacturer}` });
  return checks;
}

/**
 * Up to SAMPLE_POINTS readable points, one per address: each table the model uses first (a device without
 * that table refuses it: an I/O board's discrete inputs tell it from a relay board), then points with a
 * judged unit spread over the map, then the rest.
 */
function samplePoints(model: ModelConfig): (PointConfig & { modbus: ModbusPointBlock })[] {
  const readable = model.points.filter(hasBlock).filter((p) => p.access !== 'W' && p.scale_factor === undefined);
  const judged = readable.filter((p) => p.unit !== undefined && JUDGED_UNITS.has(p.unit));
  const picked: typeof readable = [];
  const add = (p: (typeof readable)[number]): void => {
    if (picked.length < SAMPLE_POINTS && !picked.some((q) => q.modbus.table === p.modbus.table && q.modbus.address === p.modbus.address)) picked.push(p);
  };
  for (const table of new Set(readable.map((p) => p.modbus.table))) add(judged.find((p) => p.modbus.table === table) ?? readable.find((p) => p.modbus.table === table)!);
  const step = Math.max(1, Math.floor(judged.length / SAMPLE_POINTS));
  for (let i = 0; i < judged.length; i += step) add(judged[i]!);
  for (const p of readable) add(p);
  return picked;
}

async function pointChecks(reader: UnitReader, model: ModelConfig): Promise<Check[]> {
  const points = samplePoints(model);
  const raw: Record<string, RawPointValue> = {};
  const errors: Record<string, string> = {};
  for (const point of points) {
    const got = await readPoint(reader, point);
    if (got.ok) raw[point.name] = got.value;
    else errors[point.name] = got.why;
  }
  return classifyPoints(points, raw, errors).map((p) => {
    if (p.error !== undefined) return { pass: false, identity: false, what: `${p.name}: ${p.error}` };
    if (p.implausible !== undefined) return { pass: false, identity: false, what: `${p.name}: ${p.implausible}` };
    return { pass: true, identity: false, what: `${p.name} ${p.value === null ? `not available (${p.reason ?? ''})` : `${String(p.value)}${p.unit ? ` ${p.unit}` : ''}`}` };
  });
}

/** The reason in words: identity first, then the points (passed, then failed). */
function why(checks: readonly Check[]): string {
  const passed = checks.filter((c) => c.pass);
  const failed = checks.filter((c) => !c.pass);
  const points = checks.filter((c) => !c.identity);
  const parts = [...checks.filter((c) => c.identity).map((c) => c.what)];
  if (points.length > 0) parts.push(`${points.filter((c) => c.pass).length}/${points.length} points plausible`);
  parts.push(...failed.filter((c) => !c.identity).slice(0, 3).map((c) => c.what));
  return `${passed.length}/${checks.length} checks: ${parts.join('; ')}`;
}

/**
 * Every model's candidate for the unit behind `reader`, best first: score, then identity checks passed,
 * then checks made. Models without Modbus points (GPIO) are not candidates.
 */
export async function scoreModels(reader: UnitReader, models: readonly ModelConfig[], identity: UnitIdentity): Promise<ModelCandidate[]> {
  const scored: { candidate: ModelCandidate; identity: number; checks: number }[] = [];
  for (const model of models) {
    if (!model.points.some((p) => p.modbus)) continue;
    const checks = await identityChecks(reader, model, identity);
    const idFailed = checks.some((c) => c.identity && !c.pass && c.what.includes('SunSpec'));
    // A SunSpec model's points sit at offsets in a chain that is not there: nothing more to read.
    if (!idFailed) checks.push(...await pointChecks(reader, model));
    if (checks.length === 0) continue;
    const passed = checks.filter((c) => c.pass).length;
    const share = checks.some((c) => c.contradicts) ? CONTRADICTED : 1;
    scored.push({
      candidate: { model: model.name, score: Math.round((share * passed / checks.length) * 1000) / 1000, why: why(checks) },
      identity: checks.filter((c) => c.identity && c.pass).length,
      checks: checks.length,
    });
  }
  scored.sort((a, b) => b.candidate.score - a.candidate.score || b.identity - a.identity || b.checks - a.checks);
  return scored.filter((s) => s.candidate.score >= MIN_SCORE).slice(0, MAX_CANDIDATES).map((s) => s.candidate);
}
