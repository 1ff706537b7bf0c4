/**
 * A device's point names → its point slots in the shadow table. The names and their positions (a layout) are shared
 * by every device declared with the same points — a model's devices — so a device costs one Int32Array of slots,
 * not a Map and an array of names (4.5 MB for 1,000 devices × 100 points). A shared layout is never changed: a
 * device adding a point (an undeclared one, a write to a new name) first takes a copy of its own.
 */

interface Layout {
  readonly names: string[];
  readonly index: Map<string, number>;
  /** Devices using it; the key it is shared under, or null for a device's own copy. */
  uses: number;
  readonly key: string | null;
}

/** The shared layouts of one table, by their names. */
export class Layouts {
  private readonly byKey = new Map<string, Layout>();

  get size(): number {
    return this.byKey.size;
  }

  /** A device index of `names` (distinct) with every slot -1, sharing the layout of devices with the same names. */
  create(names: readonly string[]): PointIndex {
    const key = names.join('\u0000');
    let layout = this.byKey.get(key);
    if (!layout) {
      layout = { names: [...names], index: new Map(names.map((n, i) => [n, i])), uses: 0, key };
      this.byKey.set(key, layout);
    }
    layout.uses++;
    return new PointIndex(this, layout);
  }

  /** The device using `layout` is gone or leaves it. */
  release(layout: Layout): void {
    if (--layout.uses === 0 && layout.key !== null) this.byKey.delete(layout.key);
  }
}

export class PointIndex {
  private slots: Int32Array;
  private count: number;

  constructor(private readonly layouts: Layouts, private layout: Layout) {
    this.count = layout.names.length;
    this.slots = new Int32Array(Math.max(this.count, 1)).fill(-1);
  }

  /** Point names in the order they were added (stable output and snapshot order). Not to be changed by the caller. */
  get names(): readonly string[] {
    return this.layout.names;
  }

  get size(): number {
    return this.count;
  }

  get(name: string): number | undefined {
    const i = this.layout.index.get(name);
    return i === undefined ? undefined : this.slots[i]!;
  }

  has(name: string): boolean {
    return this.layout.index.has(name);
  }

  /** The slot of the i-th name. */
  slotAt(i: number): number {
    return this.slots[i]!;
  }

  /** Sets the slot of a name of the layout (a device's declared points, once allocated). */
  assign(name: string, slot: number): void {
    this.slots[this.layout.index.get(name)!] = slot;
  }

  /** A name the device did not have, at the end. */
  add(name: string, slot: number): void {
    if (this.layout.key !== null) {
      const own: Layout = { names: [...this.layout.names], index: new Map(this.layout.index), uses: 1, key: null };
      this.layouts.release(this.layout);
      this.layout = own;
    }
    this.layout.index.set(name, this.count);
    this.layout.names.push(name);
    if (this.count === this.slots.length) {
      const grown = new Int32Array(this.slots.length * 2);
      grown.set(this.slots);
      this.slots = grown;
    }
    this.slots[this.count++] = slot;
  }

  /** The names as they are now, safe to keep while points are added (a shared layout never changes). */
  frozenNames(): readonly string[] {
    return this.layout.key === null ? this.layout.names.slice() : this.layout.names;
  }

  /** The device is gone: its layout is dropped when no other device shares it. */
  release(): void {
    this.layouts.release(this.layout);
  }
}
