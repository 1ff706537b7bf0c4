/**
 * Snapshot and restore of the shadow, pure. A snapshot copies the fixed table's columns for the used
 * slots only (compact, a few ms for 100k points), so the persistence layer can encode and write it off
 * the hot path. The structure part (ids, models, point names) changes rarely and is tagged with
 * structureSeq so the store can reuse its encoding.
 */
import type { Shadow } from './shadow.js';
import { HAS_VALUE, HAS_WRITE, KEEP_VALUE, REPORT_ALWAYS, STATE_CODE, STR_VALUE, STR_WRITE } from './table.js';

export const SNAPSHOT_FORMAT = 1;

export interface SnapshotDevice {
  id: string;
  model: string;
  points: readonly string[];
}

export interface ShadowSnapshot {
  format: number;
  savedAt: number;
  structureSeq: number;
  devices: SnapshotDevice[];
  /** One entry per device, in `devices` order. */
  dev: { ttl: Float64Array; updatedAt: Float64Array; disconnect: Float64Array; state: Float64Array; version: Float64Array };
  /** One entry per point, devices' points concatenated in order. */
  pts: { num: Float64Array; updatedAt: Float64Array; writeNum: Float64Array; writeAt: Float64Array; flags: Float64Array };
  /** Sparse string columns: [point index, text]. */
  strValues: [number, string][];
  strWrites: [number, string][];
}

export function takeSnapshot(shadow: Shadow, now: number): ShadowSnapshot {
  const t = shadow.table;
  const devices: SnapshotDevice[] = [];
  let pointCount = 0;
  for (const d of shadow.slots()) {
    const slot = t.devices[d]!;
    // Later point additions cannot change a snapshot being written (a device's own names are copied).
    devices.push({ id: slot.id, model: slot.model, points: slot.points.frozenNames() });
    pointCount += slot.points.size;
  }
  const n = devices.length;
  const dev = {
    ttl: new Float64Array(n), updatedAt: new Float64Array(n), disconnect: new Float64Array(n),
    state: new Float64Array(n), version: new Float64Array(n),
  };
  const pts = {
    num: new Float64Array(pointCount), updatedAt: new Float64Array(pointCount), writeNum: new Float64Array(pointCount),
    writeAt: new Float64Array(pointCount), flags: new Float64Array(pointCount),
  };
  const strValues: [number, string][] = [];
  const strWrites: [number, string][] = [];
  let i = 0;
  let k = 0;
  for (const d of shadow.slots()) {
    dev.ttl[i] = t.devTtl[d]!;
    dev.updatedAt[i] = t.devUpdatedAt[d]!;
    dev.disconnect[i] = t.devDisconnect[d]!;
    dev.state[i] = t.devState[d]!;
    dev.version[i] = t.devVersion[d]!;
    i++;
    const index = t.devices[d]!.points;
    for (let j = 0; j < index.size; j++) {
      const p = index.slotAt(j);
      const flags = t.ptFlags[p]!;
      pts.num[k] = t.ptNum[p]!;
      pts.updatedAt[k] = t.ptUpdatedAt[p]!;
      pts.writeNum[k] = t.writeNum(p);
      pts.writeAt[k] = t.writeAt(p);
      pts.flags[k] = flags;
      if ((flags & STR_VALUE) !== 0) strValues.push([k, t.ptStr[p]!]);
      if ((flags & STR_WRITE) !== 0) strWrites.push([k, t.ptWriteStr.get(p)!]);
      k++;
    }
  }
  return { format: SNAPSHOT_FORMAT, savedAt: now, structureSeq: shadow.structureSeq, devices, dev, pts, strValues, strWrites };
}

export interface RestoreReport {
  restoredDevices: number;
  restoredPoints: number;
  /** Devices in the snapshot that are no longer configured: their data is destroyed (not restored). */
  droppedDevices: string[];
  /** Point values older than the device TTL: removed (seed: persisted data past its TTL is cleaned up). */
  expiredValues: number;
  /** Devices that came back online-state but were past TTL: re-judged offline at once. */
  offlineOnRestore: number;
}

/**
 * Fills the devices the shadow already has (added from config) with their persisted data: values, times,
 * write values, counters, versions. Devices are then re-judged by TTL at once. Devices whose points came
 * from a model only get those points back; devices without declared points get every persisted point.
 *
 * Rule 11: a saved time is an age only when the wall clock can be trusted. Trusted (`trusted`, default
 * true, and saved in the past): the TTL goes on from that age on the monotonic clock. Not trusted (the
 * clock is not synchronized yet — a Pi without RTC boots months behind — or the save lies in the future):
 * values and write values are kept and shown with their saved times, but none is served as fresh (a point
 * read is null) and the device is Offline until fresh data arrives.
 */
export function restoreSnapshot(shadow: Shadow, snap: ShadowSnapshot, now: number, opts: { trusted?: boolean } = {}): RestoreReport {
  const mono = shadow.clock.mono();
  const trusted = opts.trusted ?? true;
  /** Monotonic time of a saved wall time, or -Infinity (stale) when its age cannot be trusted. */
  const seenMono = (savedAt: number): number => (trusted && savedAt <= now ? mono - (now - savedAt) : -Infinity);
  const t = shadow.table;
  const report: RestoreReport = { restoredDevices: 0, restoredPoints: 0, droppedDevices: [], expiredValues: 0, offlineOnRestore: 0 };
  const strValues = new Map(snap.strValues);
  const strWrites = new Map(snap.strWrites);
  let k = 0;
  snap.devices.forEach((sd, i) => {
    const base = k;
    k += sd.points.length;
    const d = shadow.slotIndex(sd.id);
    if (d < 0) {
      report.droppedDevices.push(sd.id);
      return;
    }
    const slot = t.devices[d]!;
    const ttl = t.devTtl[d]!;
    t.devUpdatedAt[d] = snap.dev.updatedAt[i]!;
    t.devSeenMono[d] = seenMono(t.devUpdatedAt[d]!);
    t.devDisconnect[d] = snap.dev.disconnect[i]!;
    t.devVersion[d] = snap.dev.version[i]!;
    t.devState[d] = snap.dev.state[i]!;
    report.restoredDevices++;
    sd.points.forEach((name, j) => {
      let p = slot.points.get(name);
      if (p === undefined) {
        if (slot.declared) return;
        p = t.allocPoint();
        if (p < 0) return;
        slot.points.add(name, p);
      }
      const at = base + j;
      const saved = snap.pts.flags[at]!;
      // Report mode and keep come from today's config, not from the file.
      const config = t.ptFlags[p]! & (REPORT_ALWAYS | KEEP_VALUE);
      let flags = config | (saved & (HAS_WRITE | STR_WRITE));
      t.setWrite(p, snap.pts.writeNum[at]!, snap.pts.writeAt[at]!);
      const writeStr = strWrites.get(at);
      if (writeStr === undefined) t.ptWriteStr.delete(p);
      else t.ptWriteStr.set(p, writeStr);
      const savedAt = snap.pts.updatedAt[at]!;
      const untrusted = !trusted || savedAt > now;
      const expired = !untrusted && now - savedAt > ttl;
      // Past its TTL (by a trusted age): dropped, except a kept total (a pulse counter's count must go on after
      // a long power cut). Of unknown age or expired but kept: shown, not served as fresh.
      const keep = (saved & HAS_VALUE) !== 0 && (!expired || (config & KEEP_VALUE) !== 0);
      if ((saved & HAS_VALUE) !== 0 && !keep) report.expiredValues++;
      if (keep) {
        flags |= saved & (HAS_VALUE | STR_VALUE);
        t.ptNum[p] = snap.pts.num[at]!;
        t.ptStr[p] = strValues.get(at);
        t.ptUpdatedAt[p] = savedAt;
        t.ptSeenMono[p] = expired ? -Infinity : seenMono(savedAt);
      } else {
        t.ptNum[p] = 0;
        t.ptStr[p] = undefined;
        t.ptUpdatedAt[p] = 0;
      }
      t.ptFlags[p] = flags;
      t.ptExact.delete(p);
      report.restoredPoints++;
    });
    // Transient states are never persisted as such; a device past its TTL is offline now.
    const state = t.devState[d]!;
    if (state === STATE_CODE.Checking || state === STATE_CODE.Refreshing) t.devState[d] = STATE_CODE.Online;
    if (t.devState[d] !== STATE_CODE.Offline && mono - t.devSeenMono[d]! > ttl) {
      t.devState[d] = STATE_CODE.Offline;
      report.offlineOnRestore++;
    }
  });
  shadow.changeSeq++;
  shadow.structureSeq++;
  return report;
}
