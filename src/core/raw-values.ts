/**
 * Raw device values → shadow values for a whole update, with what the model says about the device's own
 * markers (docs/model-fields.md): a raw value listed in `invalid`, a NaN/infinite float, a code missing from
 * `values`, or a missing/invalid `scale_factor` is NOT a measurement — the point is "not available" with a
 * reason, never a number like 214748364.7 V. Pure; the sink, the console's test read and `shadowgate probe`
 * all go through here, so they show the same thing.
 */
import { fromRaw, type PointModel } from './point-value.js';
import type { Value } from './types.js';

export type Raw = number | string | boolean;

export interface RawPointModel extends PointModel {
  invalid?: readonly { raw: number | string; reason: string }[];
  values?: Readonly<Record<string, number | string>>;
  scale_factor?: string;
  /** Only the data type matters here: hex markers are bit patterns of it. */
  modbus?: { data_type: string };
}

export interface Interpreted {
  values: Record<string, Value>;
  /** The value before rounding to `decimals`, where rounding changed it (what a persona serves: SetOptions.exact). */
  exact?: Record<string, number>;
  /** Points without a value, with the reason (the device answered; this is no failure). */
  unavailable: Record<string, string>;
}

const BITS: Record<string, number> = { int16: 16, uint16: 16, int32: 32, uint32: 32, int64: 64, uint64: 64, float32: 32, float64: 64 };

/** A marker as the decoded raw value: hex text is the register bit pattern of the point's data type. */
export function markerValue(raw: number | string, dataType: string | undefined): number {
  if (typeof raw === 'number') return raw;
  const pattern = BigInt(raw);
  const bits = BITS[dataType ?? ''] ?? 64;
  const masked = BigInt.asUintN(bits, pattern);
  if (dataType === 'float32' || dataType === 'float64') {
    const view = new DataView(new ArrayBuffer(8));
    if (dataType === 'float32') {
      view.setUint32(0, Number(masked));
      return view.getFloat32(0);
    }
    view.setBigUint64(0, masked);
    return view.getFloat64(0);
  }
  return Number(dataType?.startsWith('int') ? BigInt.asIntN(bits, masked) : masked);
}

const sameRaw = (a: number, b: Raw): boolean => (typeof b === 'number' ? a === b || (Number.isNaN(a) && Number.isNaN(b)) : typeof b === 'boolean' ? a === (b ? 1 : 0) : false);

/** The reason a raw value is not a measurement of this point, or null when it is one. */
export function invalidReason(point: RawPointModel, raw: Raw): string | null {
  for (const marker of point.invalid ?? []) {
    if (sameRaw(markerValue(marker.raw, point.modbus?.data_type), raw)) return marker.reason;
  }
  if (typeof raw === 'number' && !Number.isFinite(raw)) return Number.isNaN(raw) ? 'not a number (NaN)' : 'infinite';
  return null;
}

/** One point: its shadow value, or the reason it has none. `scaleRaw` is the raw value of its scale_factor point. */
export function interpretPoint(point: RawPointModel, raw: Raw, scaleRaw?: Raw): { value: Value; exact?: number } | { reason: string } {
  const bad = invalidReason(point, raw);
  if (bad !== null) return { reason: bad };
  if (point.values) {
    const code = typeof raw === 'boolean' ? (raw ? 1 : 0) : Number(raw);
    const meaning = point.values[String(code)];
    if (meaning === undefined) return { reason: `unknown code ${String(raw)}` };
    // The map gives the meaning itself: no scale/offset on top.
    if (point.type === 'string') return { value: String(meaning) };
    return typeof meaning === 'number' ? { value: meaning } : { reason: `code ${code} means "${meaning}", not a number` };
  }
  let n = raw;
  if (point.scale_factor !== undefined) {
    if (scaleRaw === undefined) return { reason: `scale factor ${point.scale_factor} not read` };
    const e = Number(scaleRaw);
    if (!Number.isInteger(e) || Math.abs(e) > 10) return { reason: `scale factor ${point.scale_factor} not available` };
    // Dividing by 10^-e keeps 2305 × 10^-1 at 230.5 rather than 230.50000000000003.
    n = e < 0 ? Number(raw) / 10 ** -e : Number(raw) * 10 ** e;
  }
  const value = fromRaw(point, n);
  if (value === undefined) return { reason: 'not a number' };
  if (point.type !== 'float' || point.decimals === undefined || typeof value !== 'number') return { value };
  const exact = Number(n) * (point.scale ?? 1) + (point.offset ?? 0);
  // Below a relative 1e-12 the difference is binary noise of the scaling (2305 × 0.1), not a digit rounding dropped.
  return Math.abs(exact - value) > Math.abs(value) * 1e-12 ? { value, exact } : { value };
}

/**
 * A whole update. A scale factor read in the same update is used; otherwise `known` gives the last raw value
 * the caller kept (a readPoint of one point still scales right).
 */
export function interpretRaw(points: ReadonlyMap<string, RawPointModel>, raw: Readonly<Record<string, Raw>>, known: (name: string) => Raw | undefined = () => undefined): Interpreted {
  const out: Interpreted = { values: {}, unavailable: {} };
  for (const name in raw) {
    const point = points.get(name);
    if (!point) continue;
    let scaleRaw: Raw | undefined;
    if (point.scale_factor !== undefined) {
      const sfPoint = points.get(point.scale_factor);
      scaleRaw = raw[point.scale_factor] ?? known(point.scale_factor);
      // A scale factor that is itself "not implemented" (SunSpec 0x8000) leaves the value without a scale.
      if (scaleRaw !== undefined && sfPoint && invalidReason(sfPoint, scaleRaw) !== null) scaleRaw = Number.NaN;
    }
    const r = interpretPoint(point, raw[name]!, scaleRaw);
    if ('value' in r) {
      out.values[name] = r.value;
      if (r.exact !== undefined) (out.exact ??= {})[name] = r.exact;
    }
    else out.unavailable[name] = r.reason;
  }
  return out;
}
