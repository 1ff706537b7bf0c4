/**
 * A point's model applied to values, both ways, for every driver alike: inbound raw → shadow value
 * (`value = raw * scale + offset`, rounded to `decimals`, typed by the point), outbound request value →
 * checked shadow value + raw value to send (scale/offset inverted). Pure.
 */
import { invalidValue } from './errors.js';
import type { PointType, Value } from './types.js';

export interface PointModel {
  name: string;
  type: PointType;
  scale?: number;
  offset?: number;
  decimals?: number;
  /** Bounds of what a write may set (the model's; reads are not clipped). */
  min?: number;
  max?: number;
  /** Coded values (raw code → meaning): writes send the code of the meaning asked for. */
  values?: Readonly<Record<string, number | string>>;
}

type Raw = number | string | boolean;

const round = (v: number, decimals: number): number => {
  const f = 10 ** decimals;
  return Math.round(v * f) / f;
};

/** Shadow value for a raw device value; undefined when the raw value cannot be a value of this point. */
export function fromRaw(point: PointModel, raw: Raw): Value | undefined {
  if (point.type === 'string') return typeof raw === 'string' ? raw : String(raw);
  const n = typeof raw === 'boolean' ? (raw ? 1 : 0) : typeof raw === 'number' ? raw : Number(raw);
  if (!Number.isFinite(n)) return undefined;
  const v = n * (point.scale ?? 1) + (point.offset ?? 0);
  if (!Number.isFinite(v)) return undefined;
  if (point.type === 'int') return Math.round(v);
  if (point.decimals === undefined) return v;
  // Rounding 1e308 to a decimal overflows to Infinity; a number that large has no decimals to round anyway.
  const r = round(v, point.decimals);
  return Number.isFinite(r) ? r : v;
}

/** A request value in an error text: short, and never a throw (a value nested 50,000 deep overflows JSON.stringify). */
function show(value: unknown): string {
  if (value !== null && typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object';
  return JSON.stringify(value) ?? String(value);
}

const NUMERIC = /^\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/;

/**
 * Checks a requested write value against the point type (query strings arrive as text) and returns
 * the value to record as writeValue and the raw value for the driver.
 */
export function toRaw(point: PointModel, value: unknown): { value: Value; raw: Raw } {
  if (point.values) return toCode(point, point.values, value);
  if (point.type === 'string') {
    if (typeof value === 'string') return { value, raw: value };
    if (typeof value === 'number' && Number.isFinite(value)) return { value: String(value), raw: String(value) };
    throw invalidValue(`value ${show(value)} is not a string for point ${point.name}`);
  }
  let n: number | undefined;
  if (typeof value === 'number') n = value;
  else if (typeof value === 'boolean') n = value ? 1 : 0;
  else if (typeof value === 'string' && NUMERIC.test(value)) n = Number(value);
  else if (typeof value === 'string' && /^(true|false)$/i.test(value.trim())) n = value.trim().toLowerCase() === 'true' ? 1 : 0;
  const shown = typeof value === 'string' ? `"${value}"` : show(value);
  if (n === undefined || !Number.isFinite(n)) throw invalidValue(`value ${shown} is not ${point.type === 'int' ? 'an int' : 'a float'} for point ${point.name}`);
  if (point.type === 'int' && !Number.isInteger(n)) throw invalidValue(`value ${shown} is not an int for point ${point.name}`);
  // Past 2^53 an int is no longer held exactly (1e20 read back is another number).
  if (point.type === 'int' && !Number.isSafeInteger(n)) throw invalidValue(`value ${shown} is out of range for int point ${point.name} (at most ±${Number.MAX_SAFE_INTEGER})`);
  if (point.min !== undefined && n < point.min) throw invalidValue(`value ${shown} is below the lowest value ${point.min} of point ${point.name} (${range(point)})`);
  if (point.max !== undefined && n > point.max) throw invalidValue(`value ${shown} is above the highest value ${point.max} of point ${point.name} (${range(point)})`);
  const raw = (n - (point.offset ?? 0)) / (point.scale ?? 1);
  // A value whose raw form overflows (1e308 / 0.1) would be sent as something else, or read back as nothing.
  if (!Number.isFinite(raw)) throw invalidValue(`value ${shown} is out of range for point ${point.name} (its raw value ${raw} with scale ${point.scale ?? 1})`);
  return { value: n, raw };
}

/** A point's write bounds in words: "0..1", "at least 5", "at most 35". */
const range = (point: PointModel): string =>
  point.min !== undefined && point.max !== undefined ? `${point.min}..${point.max}` : point.min !== undefined ? `at least ${point.min}` : `at most ${point.max}`;

/** The code of a meaning (`values` map); anything not in the map is refused, naming what is allowed. */
function toCode(point: PointModel, map: Readonly<Record<string, number | string>>, value: unknown): { value: Value; raw: Raw } {
  const entries = Object.entries(map);
  const wanted = typeof value === 'string' ? value.trim() : value;
  const hit = entries.find(([, meaning]) => meaning === wanted || String(meaning) === String(wanted));
  if (!hit) {
    const shown = typeof value === 'string' ? `"${value}"` : show(value);
    throw invalidValue(`value ${shown} is not one of ${entries.map(([, m]) => JSON.stringify(m)).join(', ')} for point ${point.name}`);
  }
  return { value: hit[1], raw: Number(hit[0]) };
}

/** A value the shadow can hold: a finite number or a string (the table has no slot for anything else). */
export function checkValue(name: string, v: Value): void {
  // v - v is 0 only for finite numbers (NaN and ±Infinity give NaN).
  if (typeof v === 'number' ? v - v !== 0 : typeof v !== 'string') {
    throw invalidValue(`value for point ${name} must be a finite number or a string`);
  }
}
