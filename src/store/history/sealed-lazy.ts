/**
 * Sealed segments' footer indexes read on query, the most recently used few kept: held for every sealed segment,
 * they grew by about 1 MB a seal for 1,000 × 100 points (10,000 samples a second) until max_disk, some 50 MB at
 * 512 MB. A sealed segment keeps its file, size and time range; its index is loaded (SealedSegment.load) when a
 * query reaches it. The cost moves to queries: one footer read per sealed segment not among the last used.
 */
import type { Samples } from './format.js';
import { SealedSegment } from './segment.js';

/**
 * Footer indexes kept loaded: the newest sealed data, what dashboards ask for. A segment sealed in place keeps
 * just its directory's page index (segment.ts: ~6 KB for 1,000 × 100 points); one of the first format, its whole directory.
 */
export const RESIDENT_INDEXES = 2;

/** The loaded indexes, least recently used first (a Map keeps insertion order). */
export class SealedIndexCache {
  private readonly loaded = new Map<LazySealedSegment, Promise<SealedSegment | null>>();

  constructor(private readonly max = RESIDENT_INDEXES) {}

  get size(): number {
    return this.loaded.size;
  }

  /** The segment's index, loaded if it is not; null when its file is no longer a whole sealed segment. */
  get(seg: LazySealedSegment): Promise<SealedSegment | null> {
    let index = this.loaded.get(seg);
    if (index) this.loaded.delete(seg);
    else index = SealedSegment.load(seg.seq, seg.path).catch(() => null);
    this.keep(seg, index);
    return index;
  }

  keep(seg: LazySealedSegment, index: Promise<SealedSegment | null>): void {
    this.loaded.set(seg, index);
    for (const old of this.loaded.keys()) {
      if (this.loaded.size <= this.max) break;
      this.loaded.delete(old);
    }
  }

  drop(seg: LazySealedSegment): void {
    this.loaded.delete(seg);
  }
}

/** A sealed segment whose index lives in the cache, not in it. */
export class LazySealedSegment extends SealedSegment {
  constructor(loaded: SealedSegment, private readonly cache: SealedIndexCache, keep = false) {
    super(loaded.seq, loaded.path);
    this.bytes = loaded.bytes;
    this.minTs = loaded.minTs;
    this.maxTs = loaded.maxTs;
    if (keep) cache.keep(this, Promise.resolve(loaded));
  }

  override async readRaw(series: number, start: number, endEx: number, out: Samples): Promise<void> {
    await (await this.cache.get(this))?.readRaw(series, start, endEx, out);
  }

  override async hasRollups(series: number, kind: number): Promise<boolean> {
    return (await (await this.cache.get(this))?.hasRollups(series, kind)) ?? false;
  }

  override async readRollups(series: number, kind: number): Promise<Float64Array> {
    return (await (await this.cache.get(this))?.readRollups(series, kind)) ?? new Float64Array(0);
  }

  /** The segment is retired: its index is not kept. */
  forget(): void {
    this.cache.drop(this);
  }
}
