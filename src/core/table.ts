/**
 * The fixed-size storage behind the shadow: columns allocated once from max_devices/max_points
 * (typed arrays for numbers and times, slot arrays for strings), so memory does not grow with traffic.
 * Slots are recycled through free lists; running out is the caller's clear error, never growth.
 */
import { Layouts, type PointIndex } from './point-index.js';
import type { DeviceState } from './types.js';

export const STATES: readonly DeviceState[] = ['Offline', 'Initializing', 'Online', 'Checking', 'MaybeOffline', 'Refreshing'];
export const STATE_CODE: Record<DeviceState, number> = {
  Offline: 0, Initializing: 1, Online: 2, Checking: 3, MaybeOffline: 4, Refreshing: 5,
};

// Point flag bits.
export const HAS_VALUE = 1;
export const STR_VALUE = 2;
export const HAS_WRITE = 4;
export const STR_WRITE = 8;
export const REPORT_ALWAYS = 16;
/** The device answered with its own "not available" marker: no value, a reason in ptReason. */
export const UNAVAILABLE = 32;
/** A running total (a pulse counter): restore keeps its value whatever its age (from config, like REPORT_ALWAYS). */
export const KEEP_VALUE = 64;

/**
 * Free slots of one table, lowest first: the slots never used are a counter, so only freed ones take memory (a
 * free list of every slot was 4 B a point, written in full at start). Freed slots are handed out again first.
 */
class SlotPool {
  private fresh = 0;
  private readonly freed: number[] = [];

  constructor(private readonly size: number) {}

  get available(): number {
    return this.freed.length + this.size - this.fresh;
  }

  take(): number {
    if (this.freed.length > 0) return this.freed.pop()!;
    return this.fresh < this.size ? this.fresh++ : -1;
  }

  give(slot: number): void {
    this.freed.push(slot);
  }
}

/** Per-device data that is not numeric: identity and the point index. */
export interface DeviceSlot {
  id: string;
  model: string;
  /** Point name → point slot; its `names` in insertion order (stable output and snapshot order). */
  points: PointIndex;
  /** True when points came from a model: restore only fills those. */
  declared: boolean;
}

export class ShadowTable {
  readonly devices: (DeviceSlot | undefined)[];
  readonly devTtl: Float64Array;
  readonly devUpdatedAt: Float64Array;
  /** Monotonic ms of the last data (rule 11): what TTL and the 60 s rule measure; -Infinity = stale/never. */
  readonly devSeenMono: Float64Array;
  readonly devDisconnect: Uint32Array;
  readonly devState: Uint8Array;
  readonly devVersion: Float64Array;

  readonly ptNum: Float64Array;
  readonly ptUpdatedAt: Float64Array;
  /** Monotonic ms of the point's last value: a point read is null once it is older than the TTL. */
  readonly ptSeenMono: Float64Array;
  readonly ptFlags: Uint8Array;
  readonly ptStr: (string | undefined)[];
  /** Write values that are strings, by point slot; sparse (a slot array was 8 B a point for a handful of strings). */
  readonly ptWriteStr = new Map<number, string>();
  /**
   * The numeric write value and the time of the last write, by point slot; sparse, like ptWriteStr: most points
   * are never written, and two columns were 16 B a point (1.6 MB at 100k points). Absent: 0 and 0.
   */
  private readonly ptWrite = new Map<number, { num: number; at: number }>();
  /** Why a point flagged UNAVAILABLE has no value; sparse (only such points are in it). */
  readonly ptReason = new Map<number, string>();
  /**
   * The unrounded value of a point a persona reads (one `KeepExact` asked for), while its shown value is rounded to the
   * model's `decimals`; sparse: only such slots are in `keepExact`, and only when rounding changed the value.
   */
  readonly keepExact = new Set<number>();
  readonly ptExact = new Map<number, number>();
  /** Point names and positions shared by the devices declared with the same points (point-index.ts). */
  readonly layouts = new Layouts();

  private readonly freeDevices: SlotPool;
  private readonly freePoints: SlotPool;

  constructor(readonly maxDevices: number, readonly maxPoints: number) {
    this.devices = new Array<DeviceSlot | undefined>(maxDevices).fill(undefined);
    this.devTtl = new Float64Array(maxDevices);
    this.devUpdatedAt = new Float64Array(maxDevices);
    this.devSeenMono = new Float64Array(maxDevices);
    this.devDisconnect = new Uint32Array(maxDevices);
    this.devState = new Uint8Array(maxDevices);
    this.devVersion = new Float64Array(maxDevices);
    this.ptNum = new Float64Array(maxPoints);
    this.ptUpdatedAt = new Float64Array(maxPoints);
    this.ptSeenMono = new Float64Array(maxPoints);
    this.ptFlags = new Uint8Array(maxPoints);
    this.ptStr = new Array<string | undefined>(maxPoints).fill(undefined);
    this.freeDevices = new SlotPool(maxDevices);
    this.freePoints = new SlotPool(maxPoints);
  }

  get freeDeviceSlots(): number {
    return this.freeDevices.available;
  }

  get freePointSlots(): number {
    return this.freePoints.available;
  }

  /** Bytes held by the columns (what `memoryUsage` reports); fixed for the process lifetime. */
  get allocatedBytes(): number {
    const numeric = this.maxDevices * (8 + 8 + 8 + 4 + 1 + 8) + this.maxPoints * (8 + 8 + 8 + 1);
    const slotArrays = (this.maxDevices + this.maxPoints) * 8;
    return numeric + slotArrays;
  }

  /** The numeric write value of point slot `p` (0 when it has none, or a string one: see ptWriteStr). */
  writeNum(p: number): number {
    return this.ptWrite.size === 0 ? 0 : this.ptWrite.get(p)?.num ?? 0;
  }

  /** Wall time of point slot `p`'s last write, ms (0: never written). */
  writeAt(p: number): number {
    return this.ptWrite.size === 0 ? 0 : this.ptWrite.get(p)?.at ?? 0;
  }

  setWrite(p: number, num: number, at: number): void {
    if (at === 0 && Object.is(num, 0)) {
      this.ptWrite.delete(p);
      return;
    }
    const w = this.ptWrite.get(p);
    if (w) {
      w.num = num;
      w.at = at;
    } else {
      this.ptWrite.set(p, { num, at });
    }
  }

  allocDevice(slot: DeviceSlot): number {
    const index = this.freeDevices.take();
    if (index < 0) return -1;
    this.devices[index] = slot;
    this.devTtl[index] = 0;
    this.devUpdatedAt[index] = 0;
    this.devSeenMono[index] = -Infinity;
    this.devDisconnect[index] = 0;
    this.devState[index] = STATE_CODE.Offline;
    this.devVersion[index] = 0;
    return index;
  }

  freeDevice(index: number): void {
    const slot = this.devices[index];
    if (!slot) return;
    for (let i = 0; i < slot.points.size; i++) this.freePoint(slot.points.slotAt(i));
    slot.points.release();
    this.devices[index] = undefined;
    this.freeDevices.give(index);
  }

  allocPoint(flags = 0): number {
    const index = this.freePoints.take();
    if (index < 0) return -1;
    this.ptNum[index] = 0;
    this.ptUpdatedAt[index] = 0;
    this.ptSeenMono[index] = -Infinity;
    this.ptWrite.delete(index);
    this.keepExact.delete(index);
    this.ptExact.delete(index);
    this.ptFlags[index] = flags;
    return index;
  }

  private freePoint(index: number): void {
    this.ptFlags[index] = 0;
    this.ptStr[index] = undefined;
    this.ptWriteStr.delete(index);
    this.ptWrite.delete(index);
    this.ptReason.delete(index);
    this.keepExact.delete(index);
    this.ptExact.delete(index);
    this.freePoints.give(index);
  }
}
