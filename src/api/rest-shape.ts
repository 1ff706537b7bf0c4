/**
 * The REST mapping of the shadow (SPEC "Device"/"DevicePoint" as the shadow endpoints return them):
 * snake_case, points as an array, `YYYY-MM-DD HH:MM:SS` local time, zero time `0001-01-01 00:00:00`.
 * It lives here and nowhere else; the MQTT exporter gets `shadowAllJson` injected.
 */
import { formatGoDuration } from '../core/duration.js';
import { localTimeText } from '../util/local-time.js';
import type { DeviceRecord, PointRecord } from '../core/records.js';
import type { Shadow, ShadowStats } from '../core/shadow.js';
import type { Device, DevicePoint, Value } from '../core/types.js';
import { ZERO_TIME_ISO } from '../core/types.js';

export interface RestDevicePoint {
  name: string;
  value: Value | null;
  write_value: Value | null;
  updated_at: string;
  write_time: string;
  /** Only when the device reported "not available" for the point: why value is null. */
  reason?: string;
}

export interface RestDevice {
  id: string;
  model: string;
  points: RestDevicePoint[];
  online: boolean;
  state: Device['state'];
  ttl: string;
  disconnect_times: number;
  updated_at: string;
  version: number;
}

export interface RestStats {
  memoryUsage: string;
  cacheHitRate: string;
  totalDevices: number;
  onlineDevices: number;
  dataPoints: number;
}

export const ZERO_TIME_TEXT = '0001-01-01 00:00:00';

/** Local `YYYY-MM-DD HH:MM:SS`; 0 / zero ISO time / unparsable → the zero text. */
export function formatLocalTime(time: number | string): string {
  const ms = typeof time === 'number' ? time : time === ZERO_TIME_ISO ? 0 : Date.parse(time);
  return ms === 0 || !Number.isFinite(ms) ? ZERO_TIME_TEXT : localTimeText(ms);
}

/** From the seed's internal point (ISO times) or a record (epoch ms): the same REST point. */
export function toRestPoint(p: DevicePoint | PointRecord): RestDevicePoint {
  const r: RestDevicePoint = {
    name: p.name,
    value: p.value,
    write_value: p.writeValue,
    updated_at: formatLocalTime(p.updatedAt),
    write_time: formatLocalTime(p.writeAt),
  };
  if (p.reason !== undefined) r.reason = p.reason;
  return r;
}

export const toRestDevice = (d: Device | DeviceRecord): RestDevice => ({
  id: d.id,
  model: d.modelName,
  points: (Array.isArray(d.points) ? d.points : Object.values(d.points)).map(toRestPoint),
  online: d.online,
  state: d.state,
  ttl: typeof d.ttl === 'number' ? formatGoDuration(d.ttl) : d.ttl,
  disconnect_times: d.disconnectTimes,
  updated_at: formatLocalTime(d.updatedAt),
  version: d.version,
});

/** Every device in REST shape, sorted by id (GetDevices sorts); `[]` when there is none. */
export const shadowAllJson = (shadow: Shadow): RestDevice[] => shadow.GetDeviceRecords().map(toRestDevice);

/** `512 B`, `12.5 KB`, `4.2 MB` (1024-based, as disk and memory tools on the Pi print them). */
export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 ** 2) return `${(bytes / 1024).toFixed(1)} KB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MB`;
  return `${(bytes / 1024 ** 3).toFixed(1)} GB`;
}

/** `97.50%`; before any lookup the rate is undefined (NaN) and shows as `0.00%`. */
export const formatPercent = (rate: number): string => `${(Number.isFinite(rate) ? rate * 100 : 0).toFixed(2)}%`;

export const toRestStats = (s: ShadowStats): RestStats => ({
  memoryUsage: formatBytes(s.allocatedBytes),
  cacheHitRate: formatPercent(s.hitRate),
  totalDevices: s.totalDevices,
  onlineDevices: s.onlineDevices,
  dataPoints: s.dataPoints,
});
