/**
 * One read of a device's points, judged point by point: the value with its unit, the device's own "not
 * available" (raw-values.ts), a failed request, and a flag on each implausible value (plausibility.ts).
 * Pure. `shadowgate probe` prints it; the console's test read shows it, so both say the same thing.
 */
import { implausibility } from './plausibility.js';
import { interpretRaw, markerValue, type Raw, type RawPointModel } from './raw-values.js';
import type { Value } from './types.js';

/** What a point needs here: its model (as raw-values.ts reads it) and its unit. */
export interface ReportPoint extends RawPointModel {
  unit?: string | undefined;
}

/** One point's outcome; exactly one of value (with implausible?), reason (not available) or error is meaningful. */
export interface ProbePoint {
  name: string;
  value: Value | null;
  unit?: string;
  /** Why the value is null: the device's "not available" (an invalid marker, an unknown code, NaN, …). */
  reason?: string;
  /** The request for this point failed. */
  error?: string;
  /** Why the value is not plausible. */
  implausible?: string;
}

export interface ProbeSummary {
  points: number;
  ok: number;
  implausible: number;
  not_available: number;
  failed: number;
}

/** Whether the point's model declares this raw value as one of its "not available" markers. */
function declaredMarker(point: ReportPoint, raw: Raw | undefined): boolean {
  if (typeof raw !== 'number') return false;
  return (point.invalid ?? []).some((m) => {
    const v = markerValue(m.raw, point.modbus?.data_type);
    return v === raw || (Number.isNaN(v) && Number.isNaN(raw));
  });
}

/** The outcome of each readable point, in model order. */
export function classifyPoints(points: readonly ReportPoint[], raw: Readonly<Record<string, Raw>>, errors: Readonly<Record<string, string>>): ProbePoint[] {
  const { values, unavailable } = interpretRaw(new Map(points.map((p) => [p.name, p])), raw);
  return points.map((point) => {
    const out: ProbePoint = { name: point.name, value: null, ...(point.unit ? { unit: point.unit } : {}) };
    if (Object.hasOwn(errors, point.name)) return { ...out, error: errors[point.name]! };
    if (Object.hasOwn(values, point.name)) {
      const value = values[point.name]!;
      const flag = implausibility(point, value);
      return { ...out, value, ...(flag ? { implausible: flag } : {}) };
    }
    if (Object.hasOwn(unavailable, point.name)) {
      const reason = unavailable[point.name]!;
      const r = raw[point.name];
      // A NaN/Infinity the model declares as a marker is the device's "not available"; any other is suspect.
      const flag = typeof r === 'number' && !declaredMarker(point, r) ? implausibility(point, r) : null;
      return { ...out, reason, ...(flag ? { implausible: flag } : {}) };
    }
    return { ...out, error: 'no value returned' };
  });
}

export function summarize(points: readonly ProbePoint[]): ProbeSummary {
  const failed = points.filter((p) => p.error !== undefined).length;
  const implausible = points.filter((p) => p.error === undefined && p.implausible !== undefined).length;
  const notAvailable = points.filter((p) => p.error === undefined && p.implausible === undefined && p.value === null).length;
  return { points: points.length, ok: points.length - failed - implausible - notAvailable, implausible, not_available: notAvailable, failed };
}
