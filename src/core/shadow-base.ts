/**
 * The part of the shadow that owns the fixed table: capacity, the id index, the state machine's single
 * transition point (which raises the events), and statistics. The seed's operations live in shadow.ts.
 */
import type { Clock } from './clock.js';
import { systemClock } from './clock.js';
import { unknownDevice } from './errors.js';
import type { ShadowEvents } from './events.js';
import { EventBus } from './events.js';
import { STATES, STATE_CODE, ShadowTable } from './table.js';
import type { DeviceState, Value } from './types.js';

export interface ShadowOptions {
  maxDevices: number;
  maxPoints: number;
  /** ms; used when AddDevice gets no ttl. */
  defaultTtl: number;
  clock?: Clock;
  bus?: EventBus<ShadowEvents>;
}

/** Rules 3–5: three failures, or one failure more than 60 s after the last data, mean offline. */
export const MAX_FAILURES = 3;
export const FAILURE_WINDOW_MS = 60_000;

export const ONLINE = STATE_CODE.Online;
export const OFFLINE = STATE_CODE.Offline;
export const INITIALIZING = STATE_CODE.Initializing;
export const MAYBE_OFFLINE = STATE_CODE.MaybeOffline;

export interface ShadowStats {
  totalDevices: number;
  onlineDevices: number;
  dataPoints: number;
  /** GetDevicePoint calls that returned a value, over all calls (0..1; NaN before the first call). */
  hitRate: number;
  allocatedBytes: number;
  freeDeviceSlots: number;
  freePointSlots: number;
  states: Record<DeviceState, number>;
}

export const isOnlineState = (code: number): boolean => code !== OFFLINE;

export class ShadowBase {
  readonly table: ShadowTable;
  readonly bus: EventBus<ShadowEvents>;
  readonly clock: Clock;
  readonly defaultTtl: number;
  protected readonly index = new Map<string, number>();
  /** Reused by SetDevicePoints for resolved slots (no allocation per update). */
  protected scratch = new Int32Array(256);
  protected scratchValues = new Array<Value>(256);
  protected hits = 0;
  protected lookups = 0;
  /** Bumps on every mutation: persistence saves only when it moved. */
  changeSeq = 0;
  /** Bumps when devices or points are added or removed: persistence caches the structure by it. */
  structureSeq = 0;

  constructor(opts: ShadowOptions) {
    if (!(opts.maxDevices > 0) || !(opts.maxPoints > 0)) throw new Error('shadow capacity must be positive');
    this.table = new ShadowTable(opts.maxDevices, opts.maxPoints);
    this.clock = opts.clock ?? systemClock;
    this.bus = opts.bus ?? new EventBus<ShadowEvents>();
    this.defaultTtl = opts.defaultTtl;
  }

  // ---- stats -----------------------------------------------------------------------------------

  stats(): ShadowStats {
    const t = this.table;
    const states = Object.fromEntries(STATES.map((s) => [s, 0])) as Record<DeviceState, number>;
    let online = 0;
    let points = 0;
    for (const d of this.index.values()) {
      const code = t.devState[d]!;
      states[STATES[code]!]++;
      if (code !== OFFLINE) online++;
      points += t.devices[d]!.points.size;
    }
    return {
      totalDevices: this.index.size,
      onlineDevices: online,
      dataPoints: points,
      hitRate: this.lookups === 0 ? Number.NaN : this.hits / this.lookups,
      allocatedBytes: t.allocatedBytes,
      freeDeviceSlots: t.freeDeviceSlots,
      freePointSlots: t.freePointSlots,
      states,
    };
  }

  /** Device slot for an id (used by snapshot/restore); -1 when unknown. */
  slotIndex(id: string): number {
    return this.index.get(id) ?? -1;
  }

  /** Slot indexes of every device, in insertion order. */
  slots(): IterableIterator<number> {
    return this.index.values();
  }

  // ---- internals -------------------------------------------------------------------------------

  protected slotOf(id: string): number {
    const d = this.index.get(id);
    if (d === undefined) throw unknownDevice();
    return d;
  }

  /** Rule 11: the TTL runs on the monotonic clock (`mono`), so a wall-clock step expires nothing. */
  protected expired(d: number, mono: number): boolean {
    return mono - this.table.devSeenMono[d]! > this.table.devTtl[d]!;
  }

  /** Moves the state and raises `online` when the online flag flips. */
  transition(d: number, next: number, now: number): void {
    const t = this.table;
    const prev = t.devState[d]!;
    if (prev === next) return;
    t.devState[d] = next;
    this.changeSeq++;
    if (this.bus.hasListeners('stateChange')) {
      this.bus.emit('stateChange', { id: t.devices[d]!.id, from: STATES[prev]!, to: STATES[next]!, time: now });
    }
    if ((prev === OFFLINE) !== (next === OFFLINE)) {
      this.bus.emit('online', { id: t.devices[d]!.id, online: next !== OFFLINE, state: STATES[next]!, time: now });
    }
  }

  protected goOffline(d: number, reason: ShadowEvents['ShadowOffline']['reason'], now: number): void {
    this.transition(d, OFFLINE, now);
    this.bus.emit('ShadowOffline', { id: this.table.devices[d]!.id, reason, time: now });
  }
}
