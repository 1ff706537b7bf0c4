/**
 * The device shadow: the latest known state of every device, with the seed's 16 operations (names exact,
 * as integrators know them from the upstream gateway) plus SetDevicePoints. Pure: no I/O, time from a Clock.
 * Operations that the seed says return "error" throw a GatewayError instead (TypeScript idiom).
 * Online/offline rules: see DESIGN.md §3; the ★ decisions are implemented as written there.
 */
import { parseDuration } from './duration.js';
import { GatewayError, invalidValue, unknownPoint } from './errors.js';
import { checkValue } from './point-value.js';
import type { PointChange } from './events.js';
import { deviceRecord, pointRecord, toDevice, toDevicePoint, valueAt, writeValueAt, type DeviceRecord, type PointRecord } from './records.js';
import { INITIALIZING, OFFLINE, ONLINE } from './shadow-base.js';
import { ShadowLiveness } from './shadow-liveness.js';
import { HAS_VALUE, HAS_WRITE, KEEP_VALUE, REPORT_ALWAYS, STATES, STATE_CODE, STR_VALUE, STR_WRITE, UNAVAILABLE } from './table.js';
import type { AddDeviceOptions, Device, DevicePoint, DeviceState, SetOptions, Value } from './types.js';

export { FAILURE_WINDOW_MS, MAX_FAILURES, isOnlineState, type ShadowOptions, type ShadowStats } from './shadow-base.js';

export class Shadow extends ShadowLiveness {
  // ---- lifecycle -------------------------------------------------------------------------------

  /** Adds a device (Offline, no data). An existing id is left as it is, as upstream does. */
  AddDevice(id: string, modelName: string, ttl?: number | string, options: AddDeviceOptions = {}): void {
    if (this.index.has(id)) return;
    const ttlMs = ttl === undefined ? this.defaultTtl : typeof ttl === 'string' ? parseDuration(ttl) : ttl;
    if (!(ttlMs > 0)) throw invalidValue(`ttl must be positive for device ${id}`);
    const points = options.points ?? [];
    if (this.index.size >= this.table.maxDevices) {
      throw new GatewayError('CAPACITY_DEVICES', `shadow is full: max_devices ${this.table.maxDevices} reached, cannot add ${id}`);
    }
    if (points.length > this.table.freePointSlots) {
      throw new GatewayError('CAPACITY_POINTS',
        `shadow is full: device ${id} needs ${points.length} points, ${this.table.freePointSlots} of max_points ${this.table.maxPoints} left`);
    }
    const names = [...new Set(points.map((p) => p.name))];
    const slot = { id, model: modelName, points: this.table.layouts.create(names), declared: points.length > 0 };
    const d = this.table.allocDevice(slot);
    this.table.devTtl[d] = ttlMs;
    for (const p of points) {
      if (slot.points.get(p.name)! >= 0) continue; // a name given twice: the first one counts
      slot.points.assign(p.name, this.table.allocPoint((p.report === 'always' ? REPORT_ALWAYS : 0) | (p.keep ? KEEP_VALUE : 0)));
    }
    this.index.set(id, d);
    this.changeSeq++;
    this.structureSeq++;
    this.bus.emit('deviceAdded', { id });
  }

  /** Live reconfiguration: a new TTL for a device, judged from its last data at the next TTL check. */
  SetDeviceTTL(id: string, ttl: number): void {
    if (!(ttl > 0)) throw invalidValue(`ttl must be positive for device ${id}`);
    const d = this.slotOf(id);
    if (this.table.devTtl[d] === ttl) return;
    this.table.devTtl[d] = ttl;
    this.changeSeq++;
  }

  HasDevice(id: string): boolean {
    return this.index.has(id);
  }

  /** Destroys the devices' shadows; unknown ids are ignored (upstream behaviour). */
  DeleteDevice(...ids: string[]): void {
    for (const id of ids) {
      const d = this.index.get(id);
      if (d === undefined) continue;
      this.table.freeDevice(d);
      this.index.delete(id);
      this.changeSeq++;
      this.structureSeq++;
      this.bus.emit('deviceDeleted', { id });
    }
  }

  // ---- data in ---------------------------------------------------------------------------------

  SetDevicePoint(id: string, pointName: string, value: Value): void {
    this.SetDevicePoints(id, { [pointName]: value });
  }

  /**
   * Atomic multi-point update (rule 1): all points or none, one dataChange event. Missing points are
   * created (upstream does) if capacity allows; the whole update is refused before any change otherwise.
   */
  SetDevicePoints(id: string, values: Readonly<Record<string, Value>>, opts: SetOptions = {}): void {
    const d = this.slotOf(id);
    this.checkVersion(d, id, opts);
    const dev = this.table.devices[d]!;
    // Pass 1 validates and resolves slots (one map lookup per point) before anything changes: atomicity.
    const names = Object.keys(values);
    const reasons = opts.unavailable;
    const unavailable = reasons ? Object.keys(reasons).filter((name) => !(name in values)) : [];
    const n = names.length + unavailable.length;
    if (this.scratch.length < n) {
      this.scratch = new Int32Array(Math.max(n, this.scratch.length * 2));
      this.scratchValues = new Array<Value>(this.scratch.length);
    }
    const slots = this.scratch;
    const vals = this.scratchValues;
    let missing = 0;
    for (let i = 0; i < names.length; i++) {
      const v = values[names[i]!]!;
      checkValue(names[i]!, v);
      const p = dev.points.get(names[i]!);
      if (p === undefined) missing++;
      slots[i] = p ?? -1;
      vals[i] = v;
    }
    for (let i = 0; i < unavailable.length; i++) {
      const p = dev.points.get(unavailable[i]!);
      if (p === undefined) missing++;
      slots[names.length + i] = p ?? -1;
    }
    if (missing > this.table.freePointSlots) {
      throw new GatewayError('CAPACITY_POINTS', `shadow is full: max_points ${this.table.maxPoints} reached, cannot add points to ${id}`);
    }
    if (unavailable.length > 0) names.push(...unavailable);
    this.apply(d, names, slots, vals, names.length - unavailable.length, n, reasons, opts.exact);
  }

  private checkVersion(d: number, id: string, opts: SetOptions): void {
    if (opts.expectedVersion !== undefined && opts.expectedVersion !== this.table.devVersion[d]) {
      throw new GatewayError('VERSION_CONFLICT',
        `version conflict on ${id}: expected ${opts.expectedVersion}, current ${this.table.devVersion[d]}`);
    }
  }

  /**
   * Pass 2 of an update: validated values into resolved slots (-1 = allocate), state and event. Entries from
   * `valued` on are points without a value (the device's "not available"), with their reason in `reasons`.
   */
  private apply(d: number, names: readonly string[], slots: Int32Array, vals: ArrayLike<Value>, valued: number, n: number, reasons?: Readonly<Record<string, string>>, exact?: Readonly<Record<string, number>>): void {
    const t = this.table;
    const dev = t.devices[d]!;
    const now = this.clock.now();
    const mono = this.clock.mono();
    const listening = this.bus.hasListeners('dataChange');
    const num = t.ptNum;
    const ptFlags = t.ptFlags;
    const updated = t.ptUpdatedAt;
    let changes: PointChange[] | undefined;
    for (let i = 0; i < n; i++) {
      let p = slots[i]!;
      if (p < 0) {
        p = t.allocPoint();
        dev.points.add(names[i]!, p);
        this.structureSeq++;
      }
      const flags = ptFlags[p]!;
      let changed: boolean;
      if (i >= valued) {
        const reason = reasons![names[i]!]!;
        changed = (flags & UNAVAILABLE) === 0 || t.ptReason.get(p) !== reason;
        ptFlags[p] = (flags | UNAVAILABLE) & ~(HAS_VALUE | STR_VALUE);
        t.ptStr[p] = undefined;
        t.ptReason.set(p, reason);
        t.ptExact.delete(p);
        updated[p] = now;
        t.ptSeenMono[p] = mono;
        if (listening && (changed || (flags & REPORT_ALWAYS) !== 0)) (changes ??= []).push({ name: names[i]!, value: null, reason });
        continue;
      }
      const v = vals[i]!;
      if ((flags & UNAVAILABLE) !== 0) {
        ptFlags[p] = flags & ~UNAVAILABLE;
        t.ptReason.delete(p);
      }
      if (typeof v === 'number') {
        changed = (flags & (HAS_VALUE | STR_VALUE)) !== HAS_VALUE || num[p] !== v;
        num[p] = v;
        // A persona's point: a change below the shown decimals is a change of what the persona serves.
        if (t.keepExact.size !== 0 && t.keepExact.has(p)) changed = this.setExact(p, exact?.[names[i]!]) || changed;
        if ((flags & (HAS_VALUE | STR_VALUE)) !== HAS_VALUE) {
          ptFlags[p] = (ptFlags[p]! | HAS_VALUE) & ~STR_VALUE;
          t.ptStr[p] = undefined;
        }
      } else {
        changed = (flags & (HAS_VALUE | STR_VALUE)) !== (HAS_VALUE | STR_VALUE) || t.ptStr[p] !== v;
        t.ptStr[p] = v;
        t.ptExact.delete(p);
        ptFlags[p] = ptFlags[p]! | HAS_VALUE | STR_VALUE;
      }
      updated[p] = now;
      t.ptSeenMono[p] = mono;
      if (listening && (changed || (flags & REPORT_ALWAYS) !== 0)) (changes ??= []).push({ name: names[i]!, value: v });
    }
    t.devUpdatedAt[d] = now;
    t.devSeenMono[d] = mono;
    t.devDisconnect[d] = 0;
    t.devVersion[d]!++;
    this.changeSeq++;
    const state = t.devState[d]!;
    if (state === OFFLINE) {
      // Offline → (first data) Initializing → (a point value is set) Online.
      this.transition(d, INITIALIZING, now);
      this.transition(d, ONLINE, now);
    } else if (state !== ONLINE) {
      this.transition(d, ONLINE, now);
    }
    if (changes) this.bus.emit('dataChange', { id: dev.id, values: changes, time: now });
  }

  /** The unrounded value of slot `p` (undefined: the shown one is exact); true when it changed. */
  private setExact(p: number, value: number | undefined): boolean {
    const before = this.table.ptExact.get(p);
    if (value === undefined) this.table.ptExact.delete(p);
    else this.table.ptExact.set(p, value);
    return before !== value;
  }

  /** Keeps the unrounded value of a point from its next update on (a persona reads it); unknown names are ignored. */
  KeepExact(id: string, pointName: string): void {
    const d = this.index.get(id);
    const p = d === undefined ? undefined : this.table.devices[d]?.points.get(pointName);
    if (p !== undefined) this.table.keepExact.add(p);
  }

  /** GetDevicePoint, but the value before display rounding for a point kept with KeepExact. */
  GetExactPoint(id: string, pointName: string): Value | null {
    const v = this.GetDevicePoint(id, pointName);
    if (typeof v !== 'number' || this.table.ptExact.size === 0) return v;
    const p = this.table.devices[this.slotOf(id)]!.points.get(pointName)!;
    return this.table.ptExact.get(p) ?? v;
  }

  // ---- data out --------------------------------------------------------------------------------

  /** Rule 8: the value only while the device is online and the point's data is within the TTL; else null. */
  GetDevicePoint(id: string, pointName: string): Value | null {
    const d = this.slotOf(id);
    const t = this.table;
    const p = t.devices[d]!.points.get(pointName);
    this.lookups++;
    if (p === undefined || t.devState[d] === OFFLINE) return null;
    const flags = t.ptFlags[p]!;
    if ((flags & HAS_VALUE) === 0 || this.clock.mono() - t.ptSeenMono[p]! > t.devTtl[d]!) return null;
    this.hits++;
    return (flags & STR_VALUE) !== 0 ? t.ptStr[p]! : t.ptNum[p]!;
  }

  GetDevicePoints(id: string): Record<string, DevicePoint> {
    const out: Record<string, DevicePoint> = {};
    for (const r of deviceRecord(this.table, this.slotOf(id)).points) out[r.name] = toDevicePoint(r);
    return out;
  }

  GetDevicePointDetails(id: string, pointName: string): DevicePoint {
    return toDevicePoint(this.GetPointRecord(id, pointName));
  }

  /** One point with epoch-ms times (what REST formats from). */
  GetPointRecord(id: string, pointName: string): PointRecord {
    const d = this.slotOf(id);
    const p = this.table.devices[d]!.points.get(pointName);
    if (p === undefined) throw unknownPoint(pointName);
    return pointRecord(this.table, p, pointName);
  }

  /** One device with epoch-ms times; null when unknown. */
  GetDeviceRecord(id: string): DeviceRecord | null {
    const d = this.index.get(id);
    return d === undefined ? null : deviceRecord(this.table, d);
  }

  /** Every device with epoch-ms times, sorted by id. */
  GetDeviceRecords(): DeviceRecord[] {
    return this.GetDeviceIds().map((id) => deviceRecord(this.table, this.index.get(id)!));
  }

  /** ms since the epoch of the last data; 0 when none arrived yet. */
  GetDeviceUpdateAt(id: string): number {
    return this.table.devUpdatedAt[this.slotOf(id)]!;
  }

  /** A status refresh: Online → Refreshing → Online, or Offline when the TTL has run out meanwhile. */
  GetDeviceStatus(id: string): boolean {
    const d = this.slotOf(id);
    const state = this.table.devState[d]!;
    if (state === ONLINE) {
      const now = this.clock.now();
      this.transition(d, STATE_CODE.Refreshing, now);
      if (this.expired(d, this.clock.mono())) this.goOffline(d, 'ttl', now);
      else this.transition(d, ONLINE, now);
    } else if (state !== OFFLINE && this.expired(d, this.clock.mono())) {
      this.goOffline(d, 'ttl', this.clock.now());
    }
    return this.table.devState[d] !== OFFLINE;
  }

  GetDevice(id: string): [Device | null, boolean] {
    const r = this.GetDeviceRecord(id);
    return r === null ? [null, false] : [toDevice(r), true];
  }

  /** Every device, sorted by id (stable output; upstream's REST sorts too). */
  GetDevices(): Device[] {
    return this.GetDeviceRecords().map(toDevice);
  }

  /** Whether the device has this point (no point data copied). */
  HasPoint(id: string, pointName: string): boolean {
    const d = this.index.get(id);
    return d !== undefined && this.table.devices[d]!.points.has(pointName);
  }

  /** Ids of every device, sorted (cheap: no point data copied). */
  GetDeviceIds(): string[] {
    return [...this.index.keys()].sort();
  }

  /**
   * The last value and write value the shadow holds for a point, without rule 8's online/TTL judgement
   * and without building a DevicePoint (a driver resuming after a restart asks this for every point).
   */
  LastValues(id: string, pointName: string): { value: Value | null; writeValue: Value | null } {
    const d = this.index.get(id);
    const p = d === undefined ? undefined : this.table.devices[d]!.points.get(pointName);
    if (p === undefined) return { value: null, writeValue: null };
    return { value: valueAt(this.table, p), writeValue: writeValueAt(this.table, p) };
  }

  /** The state machine's current state (exposed in REST and stats). */
  GetDeviceState(id: string): DeviceState {
    return STATES[this.table.devState[this.slotOf(id)]!]!;
  }

  GetDeviceVersion(id: string): number {
    return this.table.devVersion[this.slotOf(id)]!;
  }

  // ---- write values ----------------------------------------------------------------------------

  /** Stores the control value sent down (rule 9); creates the point if missing, as upstream does. */
  SetWritePointValue(id: string, pointName: string, value: Value): void {
    const d = this.slotOf(id);
    const t = this.table;
    const dev = t.devices[d]!;
    let p = dev.points.get(pointName);
    if (p === undefined) {
      p = t.allocPoint();
      if (p < 0) throw new GatewayError('CAPACITY_POINTS', `shadow is full: max_points ${t.maxPoints} reached`);
      dev.points.add(pointName, p);
      this.structureSeq++;
    }
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) throw invalidValue(`write value for ${pointName} must be finite`);
      t.setWrite(p, value, this.clock.now());
      t.ptWriteStr.delete(p);
      t.ptFlags[p] = (t.ptFlags[p]! | HAS_WRITE) & ~STR_WRITE;
    } else {
      // The numeric write value before it stays, as a column kept it (a snapshot stores both).
      t.setWrite(p, t.writeNum(p), this.clock.now());
      t.ptWriteStr.set(p, value);
      t.ptFlags[p] = t.ptFlags[p]! | HAS_WRITE | STR_WRITE;
    }
    t.devVersion[d]!++;
    this.changeSeq++;
  }

  GetWritePointValue(id: string, pointName: string): Value | null {
    const d = this.slotOf(id);
    const p = this.table.devices[d]!.points.get(pointName);
    if (p === undefined) throw unknownPoint(pointName);
    return writeValueAt(this.table, p);
  }

}

export { isoTime } from './records.js';
