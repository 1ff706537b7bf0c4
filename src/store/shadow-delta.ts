/**
 * Deltas of the shadow between full generations (issue 16: flash). A full generation of a 1,000 × 100 fleet
 * is ~4.8 MB; written every persist_interval it was ~40 GB a day. A delta holds only what changed since the
 * last save: devices whose time or state moved, and points whose value, flags or write value moved. A poll
 * refreshes every point's time without changing its value; a device whose points all carry its own update
 * time says so with one bit ("all refreshed"), so refreshed points cost nothing.
 *
 * A delta is a list of ordinals into the base generation's order (devices, then their points concatenated),
 * valid while the shadow's structure is the base's (same structureSeq). Pure: the journal file is
 * shadow-journal.ts.
 */
import type { Shadow } from '../core/shadow.js';
import type { ShadowSnapshot } from '../core/snapshot.js';
import { HAS_VALUE, HAS_WRITE, STR_VALUE, STR_WRITE, UNAVAILABLE } from '../core/table.js';

const ALL_REFRESHED = 1;
const P_TIME = 1;
const P_WRITE = 2;
const P_STR = 4;
const P_STR_WRITE = 8;
const HAS_DATA = HAS_VALUE | UNAVAILABLE;

/** A growable little-endian writer (one reused buffer: a delta is encoded on the main thread every interval). */
class Writer {
  buf = Buffer.allocUnsafe(64 << 10);
  at = 0;
  private room(n: number): void {
    if (this.at + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.at + n));
    this.buf.copy(next, 0, 0, this.at);
    this.buf = next;
  }
  u8(v: number): void { this.room(1); this.buf[this.at++] = v; }
  u32(v: number): void { this.room(4); this.buf.writeUInt32LE(v, this.at); this.at += 4; }
  f64(v: number): void { this.room(8); this.buf.writeDoubleLE(v, this.at); this.at += 8; }
  str(s: string): void {
    const n = Buffer.byteLength(s);
    this.u32(n);
    this.room(n);
    this.buf.write(s, this.at);
    this.at += n;
  }
}

/** The point columns as last persisted, in file order: what a full generation is streamed from. */
export interface PersistedPoints {
  /** Table slot of each ordinal. */
  readonly slots: Int32Array;
  readonly num: Float64Array;
  readonly updatedAt: Float64Array;
  readonly flags: Uint8Array;
  /** Write value and time of ordinal k (0 when it has none). */
  writeNum(k: number): number;
  writeAt(k: number): number;
}

/** What was last persisted, per ordinal: the delta is the difference to it. */
export class DeltaTracker implements PersistedPoints {
  structureSeq = -1;
  /** The structureSeq the slot maps below were built for (kept when invalidate() forgets what was persisted). */
  private slotsSeq = -1;
  private slotsOf: Shadow | null = null;
  private devSlots = new Int32Array(0);
  private ptSlots = new Int32Array(0);
  /** Ordinal of each device's first point; one more entry than devices (a per-point device column was 4 B a point). */
  private devStart = new Int32Array(1);
  private dUpd = new Float64Array(0);
  private dVer = new Float64Array(0);
  private dState = new Uint8Array(0);
  private dDisc = new Uint32Array(0);
  private pNum = new Float64Array(0);
  private pUpd = new Float64Array(0);
  /**
   * Write values and times by ordinal, only for points that have one: most points are never written, and two
   * columns were 16 B a point.
   */
  private readonly pWrite = new Map<number, { num: number; at: number }>();
  private pFlags = new Uint8Array(0);
  /** String values by ordinal, only for points that hold one (a slot array was 8 B a point). */
  private pStr = new Map<number, string>();
  private readonly w = new Writer();

  get slots(): Int32Array { return this.ptSlots; }
  get num(): Float64Array { return this.pNum; }
  get updatedAt(): Float64Array { return this.pUpd; }
  writeNum(k: number): number { return this.pWrite.size === 0 ? 0 : this.pWrite.get(k)?.num ?? 0; }
  writeAt(k: number): number { return this.pWrite.size === 0 ? 0 : this.pWrite.get(k)?.at ?? 0; }
  get flags(): Uint8Array { return this.pFlags; }

  /** Forgets what was persisted: the next save must be a full generation. */
  invalidate(): void {
    this.structureSeq = -1;
  }

  canDelta(shadow: Shadow): boolean {
    return this.structureSeq === shadow.structureSeq;
  }

  /** Called with the encode of a full generation (same tick): everything in the table is now "persisted". */
  rebase(shadow: Shadow): void {
    const t = shadow.table;
    // The ordinals depend on the structure only: rebuilt when it changed, not at every full generation (their
    // number[] copies were ~2–4 MB of short-lived heap for 100k points, promoted by a 1 MB young generation).
    if (this.slotsOf !== shadow || this.slotsSeq !== shadow.structureSeq) this.mapSlots(shadow);
    const n = this.devSlots.length;
    const m = this.ptSlots.length;
    if (this.dUpd.length !== n) {
      this.dUpd = new Float64Array(n); this.dVer = new Float64Array(n); this.dState = new Uint8Array(n); this.dDisc = new Uint32Array(n);
    }
    if (this.pNum.length !== m) {
      this.pNum = new Float64Array(m); this.pUpd = new Float64Array(m); this.pFlags = new Uint8Array(m);
    }
    this.pStr.clear();
    this.pWrite.clear();
    for (let i = 0; i < n; i++) this.keepDevice(t, i);
    for (let k = 0; k < m; k++) this.keepPoint(t, k);
    this.structureSeq = shadow.structureSeq;
  }

  private mapSlots(shadow: Shadow): void {
    const t = shadow.table;
    const devs: number[] = [];
    const pts: number[] = [];
    const starts: number[] = [0];
    for (const d of shadow.slots()) {
      const slot = t.devices[d]!;
      for (let i = 0; i < slot.points.size; i++) pts.push(slot.points.slotAt(i));
      devs.push(d);
      starts.push(pts.length);
    }
    this.devSlots = Int32Array.from(devs);
    this.ptSlots = Int32Array.from(pts);
    this.devStart = Int32Array.from(starts);
    this.slotsSeq = shadow.structureSeq;
    this.slotsOf = shadow;
  }

  /**
   * Whether nothing but times moved since the last save: no value, flag or write value of a point, and no
   * device's state or failure count. A poll of an idle device refreshes its times and version only.
   */
  onlyTimesMoved(shadow: Shadow): boolean {
    const t = shadow.table;
    for (let i = 0; i < this.devSlots.length; i++) {
      const d = this.devSlots[i]!;
      if (t.devState[d] !== this.dState[i] || t.devDisconnect[d] !== this.dDisc[i]) return false;
    }
    for (let j = 0; j < this.ptSlots.length; j++) {
      const p = this.ptSlots[j]!;
      const flags = t.ptFlags[p]!;
      if (flags !== this.pFlags[j] || t.writeAt(p) !== this.writeAt(j) || !Object.is(t.ptNum[p], this.pNum[j])) return false;
      if ((flags & STR_VALUE) !== 0 && t.ptStr[p] !== this.pStr.get(j)) return false;
    }
    return true;
  }

  /** The changes since the last save as one record payload (a view of a reused buffer: write it before the next call). */
  delta(shadow: Shadow, now: number): Buffer {
    const t = shadow.table;
    const w = this.w;
    w.at = 0;
    w.f64(now);
    const devCountAt = w.at;
    w.u32(0);
    let devCount = 0;
    const n = this.devSlots.length;
    // Devices first, with "all refreshed" when every point with data carries the device's time.
    const allRefreshed = new Uint8Array(n);
    for (let i = 0; i < n; i++) {
      const d = this.devSlots[i]!;
      const upd = t.devUpdatedAt[d]!;
      let all = 1;
      const end = this.devStart[i + 1]!;
      for (let j = this.devStart[i]!; j < end; j++) {
        const p = this.ptSlots[j]!;
        if ((t.ptFlags[p]! & HAS_DATA) !== 0 && t.ptUpdatedAt[p] !== upd) {
          all = 0;
          break;
        }
      }
      allRefreshed[i] = all;
      if (upd === this.dUpd[i] && t.devVersion[d] === this.dVer[i] && t.devState[d] === this.dState[i] && t.devDisconnect[d] === this.dDisc[i]) continue;
      devCount++;
      w.u32(i);
      w.u8(all ? ALL_REFRESHED : 0);
      w.f64(upd);
      w.u32(t.devDisconnect[d]!);
      w.u8(t.devState[d]!);
      w.f64(t.devVersion[d]!);
      this.keepDevice(t, i);
    }
    w.buf.writeUInt32LE(devCount, devCountAt);
    const ptCountAt = w.at;
    w.u32(0);
    let ptCount = 0;
    for (let i = 0; i < n; i++) {
      const devUpd = t.devUpdatedAt[this.devSlots[i]!]!;
      const end = this.devStart[i + 1]!;
      for (let j = this.devStart[i]!; j < end; j++) if (this.deltaPoint(t, w, j, devUpd, allRefreshed[i] === 1)) ptCount++;
    }
    w.buf.writeUInt32LE(ptCount, ptCountAt);
    return w.buf.subarray(0, w.at);
  }

  /** Writes point `j` when it changed since the last save; returns whether it did. */
  private deltaPoint(t: Shadow['table'], w: Writer, j: number, devUpd: number, allRefreshed: boolean): boolean {
    const p = this.ptSlots[j]!;
    const flags = t.ptFlags[p]!;
    const str = (flags & STR_VALUE) !== 0 ? t.ptStr[p] : undefined;
    const upd = t.ptUpdatedAt[p]!;
    // A refreshed time is carried by its device's bit when the device has it; otherwise it is a change here.
    const timeMoved = upd !== this.pUpd[j] && !(allRefreshed && upd === devUpd);
    const writeMoved = t.writeAt(p) !== this.writeAt(j);
    // With the flags unchanged, a point without STR_VALUE had no string persisted either (keepPoint): the Map
    // lookup is only for string points. A lookup for every point made fleet F's delta (100,000 points) take
    // 4.2-6.5 ms of main-thread CPU at best on the bench machine; 2.9-3.2 ms without.
    if (flags === this.pFlags[j] && !timeMoved && !writeMoved && (str === undefined && (flags & STR_VALUE) === 0 || str === this.pStr.get(j))
      && Object.is(t.ptNum[p], this.pNum[j])) {
      if (upd !== this.pUpd[j]) this.pUpd[j] = upd;
      return false;
    }
    const ownTime = upd !== devUpd;
    const strWrite = writeMoved && (flags & STR_WRITE) !== 0;
    w.u32(j);
    w.u8(flags);
    w.u8((ownTime ? P_TIME : 0) | (writeMoved ? P_WRITE : 0) | (str !== undefined ? P_STR : 0) | (strWrite ? P_STR_WRITE : 0));
    if (str !== undefined) w.str(str);
    else w.f64(t.ptNum[p]!);
    if (ownTime) w.f64(upd);
    if (writeMoved) {
      if (strWrite) w.str(t.ptWriteStr.get(p) ?? '');
      else w.f64(t.writeNum(p));
      w.f64(t.writeAt(p));
    }
    this.keepPoint(t, j);
    return true;
  }

  private keepDevice(t: Shadow['table'], i: number): void {
    const d = this.devSlots[i]!;
    this.dUpd[i] = t.devUpdatedAt[d]!;
    this.dVer[i] = t.devVersion[d]!;
    this.dState[i] = t.devState[d]!;
    this.dDisc[i] = t.devDisconnect[d]!;
  }

  private keepPoint(t: Shadow['table'], k: number): void {
    const p = this.ptSlots[k]!;
    const flags = t.ptFlags[p]!;
    this.pNum[k] = t.ptNum[p]!;
    this.pUpd[k] = t.ptUpdatedAt[p]!;
    const writeNum = t.writeNum(p);
    const writeAt = t.writeAt(p);
    if (writeAt !== 0 || !Object.is(writeNum, 0)) this.pWrite.set(k, { num: writeNum, at: writeAt });
    else this.pWrite.delete(k);
    this.pFlags[k] = flags;
    const str = (flags & STR_VALUE) !== 0 ? t.ptStr[p] : undefined;
    if (str !== undefined) this.pStr.set(k, str);
    else this.pStr.delete(k);
  }
}

/** Applies delta records, oldest first, to a decoded base generation; its savedAt becomes the last record's time. */
export function applyDeltas(snap: ShadowSnapshot, records: readonly Buffer[]): void {
  const starts: number[] = [];
  let k = 0;
  for (const d of snap.devices) {
    starts.push(k);
    k += d.points.length;
  }
  starts.push(k);
  const m = k;
  const ptDev = new Int32Array(m);
  snap.devices.forEach((_, i) => ptDev.fill(i, starts[i], starts[i + 1]));
  const strValues = new Map(snap.strValues);
  const strWrites = new Map(snap.strWrites);
  for (const rec of records) {
    let at = 0;
    const time = rec.readDoubleLE(at); at += 8;
    const devCount = rec.readUInt32LE(at); at += 4;
    for (let c = 0; c < devCount; c++) {
      const i = rec.readUInt32LE(at); at += 4;
      const bits = rec[at++]!;
      const upd = rec.readDoubleLE(at); at += 8;
      const disc = rec.readUInt32LE(at); at += 4;
      const state = rec[at++]!;
      const version = rec.readDoubleLE(at); at += 8;
      if (i >= snap.devices.length) throw new Error(`delta names device ${i} of ${snap.devices.length}`);
      snap.dev.updatedAt[i] = upd;
      snap.dev.disconnect[i] = disc;
      snap.dev.state[i] = state;
      snap.dev.version[i] = version;
      if (bits & ALL_REFRESHED) {
        for (let j = starts[i]!; j < starts[i + 1]!; j++) if ((snap.pts.flags[j]! & HAS_DATA) !== 0) snap.pts.updatedAt[j] = upd;
      }
    }
    const ptCount = rec.readUInt32LE(at); at += 4;
    for (let c = 0; c < ptCount; c++) {
      const j = rec.readUInt32LE(at); at += 4;
      const flags = rec[at++]!;
      const bits = rec[at++]!;
      if (j >= m) throw new Error(`delta names point ${j} of ${m}`);
      snap.pts.flags[j] = flags;
      if (bits & P_STR) {
        const len = rec.readUInt32LE(at); at += 4;
        strValues.set(j, rec.toString('utf8', at, at + len)); at += len;
      } else {
        snap.pts.num[j] = rec.readDoubleLE(at); at += 8;
        strValues.delete(j);
      }
      const i = ptDev[j]!;
      if (bits & P_TIME) {
        snap.pts.updatedAt[j] = rec.readDoubleLE(at); at += 8;
      } else {
        snap.pts.updatedAt[j] = snap.dev.updatedAt[i]!;
      }
      if (bits & P_WRITE) {
        if (bits & P_STR_WRITE) {
          const len = rec.readUInt32LE(at); at += 4;
          strWrites.set(j, rec.toString('utf8', at, at + len)); at += len;
        } else {
          snap.pts.writeNum[j] = rec.readDoubleLE(at); at += 8;
          strWrites.delete(j);
        }
        snap.pts.writeAt[j] = rec.readDoubleLE(at); at += 8;
      }
      if ((flags & HAS_WRITE) === 0) strWrites.delete(j);
    }
    if (at !== rec.length) throw new Error(`delta record has ${rec.length - at} bytes left over`);
    snap.savedAt = time;
  }
  snap.strValues = [...strValues];
  snap.strWrites = [...strWrites];
}
