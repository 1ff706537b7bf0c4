/**
 * The series registry's memory: (device, point) → id and the set of live ids in typed arrays allocated once from
 * the number of series the history may hold, instead of two Maps of strings and objects (~130 B a series for
 * 1,000 × 100 points). Names are interned: a device's name once, a point name once for every device that has it.
 * Open addressing with linear probing, at most 3/4 full; a deletion shifts the entries after it back, so no tombstones pile up.
 */

/** A name ↔ small integer table; a name is dropped when the last series using it goes. */
class Names {
  private readonly index = new Map<string, number>();
  private readonly names: (string | undefined)[] = [];
  private readonly uses: number[] = [];
  private readonly free: number[] = [];

  find(name: string): number | undefined {
    return this.index.get(name);
  }

  name(i: number): string {
    return this.names[i]!;
  }

  /** The name's number, counting one more use. */
  acquire(name: string): number {
    let i = this.index.get(name);
    if (i === undefined) {
      i = this.free.pop() ?? this.names.length;
      this.names[i] = name;
      this.uses[i] = 0;
      this.index.set(name, i);
    }
    this.uses[i]!++;
    return i;
  }

  release(i: number): void {
    if (--this.uses[i]! > 0) return;
    this.index.delete(this.names[i]!);
    this.names[i] = undefined;
    this.free.push(i);
  }
}

const EMPTY = 0; // ids start at 1

/** Slots for `n` entries at a load of at most 0.75 (any size: a hash maps to a slot by multiply-shift). */
const slotsFor = (n: number): number => Math.max(16, Math.ceil(n / 0.75));
/** The home slot of a 32-bit hash among `size` slots (exact in a double while size < 2^21). */
const home = (h: number, size: number): number => Math.floor((h * size) / 4294967296);

const mixPair = (a: number, b: number): number => {
  let h = Math.imul(a, 0x9e3779b1) ^ Math.imul(b + 0x7f4a7c15, 0x85ebca77);
  h ^= h >>> 15;
  return Math.imul(h, 0x2c1b3c6d) >>> 0;
};
const mixId = (id: number): number => {
  const h = Math.imul(id, 0x9e3779b1);
  return (h ^ (h >>> 16)) >>> 0;
};

export interface SeriesEntry {
  id: number;
  device: string;
  point: string;
}

export class SeriesTable {
  private readonly devices = new Names();
  private readonly points = new Names();
  /** Slots of each table. */
  private readonly slots: number;
  /** By (device, point): the interned names and the id (EMPTY: a free slot). */
  private readonly keyDev: Uint32Array;
  private readonly keyPt: Uint32Array;
  private readonly keyId: Uint32Array;
  /** By id: the slot of its (device, point) entry + 1 (0: a free slot), so an id finds its names. */
  private readonly ids: Uint32Array;
  private readonly idSlot: Uint32Array;
  private count = 0;

  /** Room for `capacity` series; `set` beyond it throws (the registry refuses before). */
  constructor(readonly capacity: number) {
    const slots = slotsFor(capacity);
    this.slots = slots;
    // One allocation for the five columns.
    const all = new Uint32Array(slots * 5);
    const column = (i: number): Uint32Array => all.subarray(i * slots, (i + 1) * slots);
    [this.keyDev, this.keyPt, this.keyId, this.ids, this.idSlot] = [column(0), column(1), column(2), column(3), column(4)];
  }

  get size(): number {
    return this.count;
  }

  /** Bytes of the typed arrays (fixed for the table's life). */
  get allocatedBytes(): number {
    return this.slots * 20;
  }

  get(device: string, point: string): number | undefined {
    const d = this.devices.find(device);
    const p = d === undefined ? undefined : this.points.find(point);
    if (d === undefined || p === undefined) return undefined;
    const s = this.keySlot(d, p);
    return this.keyId[s] === EMPTY ? undefined : this.keyId[s];
  }

  has(id: number): boolean {
    return this.ids[this.idSlotOf(id)] !== EMPTY;
  }

  /** Adds a series, or moves an existing (device, point) to `id`; `id` must not be in use by another series. */
  set(id: number, device: string, point: string): void {
    if (id < 1 || id > 0xffffffff || !Number.isInteger(id)) throw new RangeError(`series id ${id} out of range`);
    const known = this.get(device, point);
    if (known === id) return;
    if (known !== undefined) this.delete(known);
    if (this.has(id)) this.delete(id);
    if (this.count >= this.capacity) throw new RangeError(`series table full (${this.capacity})`);
    const d = this.devices.acquire(device);
    const p = this.points.acquire(point);
    const s = this.keySlot(d, p);
    this.keyDev[s] = d;
    this.keyPt[s] = p;
    this.keyId[s] = id;
    const i = this.idSlotOf(id);
    this.ids[i] = id;
    this.idSlot[i] = s + 1;
    this.count++;
  }

  /** The (device, point) of a live id. */
  entry(id: number): SeriesEntry | undefined {
    const i = this.idSlotOf(id);
    if (this.ids[i] === EMPTY) return undefined;
    const s = this.idSlot[i]! - 1;
    return { id, device: this.devices.name(this.keyDev[s]!), point: this.points.name(this.keyPt[s]!) };
  }

  delete(id: number): boolean {
    const i = this.idSlotOf(id);
    if (this.ids[i] === EMPTY) return false;
    const s = this.idSlot[i]! - 1;
    this.devices.release(this.keyDev[s]!);
    this.points.release(this.keyPt[s]!);
    this.removeKey(s);
    this.removeId(i);
    this.count--;
    return true;
  }

  /** The live ids, ascending. */
  liveIds(): Uint32Array {
    const out = new Uint32Array(this.count);
    let n = 0;
    for (const id of this.ids) if (id !== EMPTY) out[n++] = id;
    return out.sort();
  }

  /** The ids of one device's series, ascending. */
  idsOf(device: string): number[] {
    const d = this.devices.find(device);
    if (d === undefined) return [];
    const out: number[] = [];
    for (let s = 0; s < this.slots; s++) if (this.keyId[s] !== EMPTY && this.keyDev[s] === d) out.push(this.keyId[s]!);
    return out.sort((a, b) => a - b);
  }

  /** The slot holding (d, p), or the free slot where it would go. */
  private keySlot(d: number, p: number): number {
    let s = home(mixPair(d, p), this.slots);
    while (this.keyId[s] !== EMPTY && (this.keyDev[s] !== d || this.keyPt[s] !== p)) s = this.next(s);
    return s;
  }

  private idSlotOf(id: number): number {
    let i = home(mixId(id), this.slots);
    while (this.ids[i] !== EMPTY && this.ids[i] !== id) i = this.next(i);
    return i;
  }

  private next(s: number): number {
    return s + 1 === this.slots ? 0 : s + 1;
  }

  /** Slots from `a` forward to `b`, wrapping. */
  private dist(a: number, b: number): number {
    return b >= a ? b - a : b + this.slots - a;
  }

  /** Backward-shift deletion: entries whose home slot is not between the hole and themselves move into it. */
  private removeKey(hole: number): void {
    for (let j = this.next(hole); this.keyId[j] !== EMPTY; j = this.next(j)) {
      const h = home(mixPair(this.keyDev[j]!, this.keyPt[j]!), this.slots);
      if (this.dist(h, j) < this.dist(hole, j)) continue;
      this.keyDev[hole] = this.keyDev[j]!;
      this.keyPt[hole] = this.keyPt[j]!;
      this.keyId[hole] = this.keyId[j]!;
      // The moved entry's id points at its new slot.
      this.idSlot[this.idSlotOf(this.keyId[hole]!)] = hole + 1;
      hole = j;
    }
    this.keyId[hole] = EMPTY;
  }

  private removeId(hole: number): void {
    for (let j = this.next(hole); this.ids[j] !== EMPTY; j = this.next(j)) {
      const h = home(mixId(this.ids[j]!), this.slots);
      if (this.dist(h, j) < this.dist(hole, j)) continue;
      this.ids[hole] = this.ids[j]!;
      this.idSlot[hole] = this.idSlot[j]!;
      hole = j;
    }
    this.ids[hole] = EMPTY;
  }
}
