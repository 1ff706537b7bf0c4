/**
 * Read-side views of the table: a point or device as plain numbers (epoch-ms times, TTL in ms). The
 * seed's internal model (ISO 8601 times) is derived from these; the REST layer formats straight from
 * them, so a request never builds an ISO string only to parse it back.
 */
import { formatGoDuration } from './duration.js';
import { HAS_VALUE, HAS_WRITE, STATES, STR_VALUE, STR_WRITE, UNAVAILABLE, type ShadowTable } from './table.js';
import type { Device, DevicePoint, DeviceState, Value } from './types.js';
import { ZERO_TIME_ISO } from './types.js';

export interface PointRecord {
  name: string;
  value: Value | null;
  writeValue: Value | null;
  /** epoch ms; 0 = never */
  updatedAt: number;
  /** epoch ms; 0 = never written */
  writeAt: number;
  /** Set when the device reported "not available" for the point: why value is null. */
  reason?: string;
}

export interface DeviceRecord {
  id: string;
  modelName: string;
  points: PointRecord[];
  online: boolean;
  state: DeviceState;
  /** ms */
  ttl: number;
  disconnectTimes: number;
  /** epoch ms; 0 = never */
  updatedAt: number;
  version: number;
}

export function valueAt(t: ShadowTable, p: number): Value | null {
  const flags = t.ptFlags[p]!;
  if ((flags & HAS_VALUE) === 0) return null;
  return (flags & STR_VALUE) !== 0 ? t.ptStr[p]! : t.ptNum[p]!;
}

export function writeValueAt(t: ShadowTable, p: number): Value | null {
  const flags = t.ptFlags[p]!;
  if ((flags & HAS_WRITE) === 0) return null;
  return (flags & STR_WRITE) !== 0 ? t.ptWriteStr.get(p)! : t.writeNum(p);
}

export function pointRecord(t: ShadowTable, p: number, name: string): PointRecord {
  const r: PointRecord = { name, value: valueAt(t, p), writeValue: writeValueAt(t, p), updatedAt: t.ptUpdatedAt[p]!, writeAt: t.writeAt(p) };
  if ((t.ptFlags[p]! & UNAVAILABLE) !== 0) r.reason = t.ptReason.get(p) ?? 'not available';
  return r;
}

export function deviceRecord(t: ShadowTable, d: number): DeviceRecord {
  const slot = t.devices[d]!;
  const state = STATES[t.devState[d]!]!;
  return {
    id: slot.id,
    modelName: slot.model,
    points: slot.points.names.map((name, i) => pointRecord(t, slot.points.slotAt(i), name)),
    online: state !== 'Offline',
    state,
    ttl: t.devTtl[d]!,
    disconnectTimes: t.devDisconnect[d]!,
    updatedAt: t.devUpdatedAt[d]!,
    version: t.devVersion[d]!,
  };
}

/** ISO 8601 for an epoch-ms time; 0 (never) is the seed's zero time. */
export const isoTime = (ms: number): string => (ms === 0 ? ZERO_TIME_ISO : new Date(ms).toISOString());

export function toDevicePoint(r: PointRecord): DevicePoint {
  const p: DevicePoint = { name: r.name, value: r.value, writeValue: r.writeValue, updatedAt: isoTime(r.updatedAt), writeAt: isoTime(r.writeAt) };
  if (r.reason !== undefined) p.reason = r.reason;
  return p;
}

export function toDevice(r: DeviceRecord): Device {
  const points: Record<string, DevicePoint> = {};
  for (const p of r.points) points[p.name] = toDevicePoint(p);
  return { ...r, points, ttl: formatGoDuration(r.ttl), updatedAt: isoTime(r.updatedAt) };
}
