/**
 * The two kinds of segment file (their blocks are read through block-reads.ts).
 *
 * - LogSegment (`<seq>.log`): the append target. One block per series per flush, so writes are
 *   sequential (SD-card friendly); its block index lives in memory, bounded by the roll limits.
 * - SealedSegment (`<seq>.seg`): a rolled log sealed in place (compact.ts): its blocks where the flushes wrote
 *   them, then per (series, kind) the list of its block offsets, rollups and a directory. Segments of the first
 *   format (`SGHSEG01`: the log rewritten grouped by series, one block per series) are read as they are.
 */
import { open, type FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import type { BlockEntry } from './block-writer.js';
import {
  HEADER_BYTES, KIND_NUM, KIND_STR, MAX_DELTA, NUM_RECORD, ROLLUP_FIELDS, type Samples, checkBlock, decodeSamples,
  parseHeader, sampleKind,
} from './format.js';
import { MERGE_GAP, openLog, readBlocks } from './block-reads.js';
import { readAt } from './scan.js';
import { grown } from '../../util/grow-typed.js';

/** First format: file magic, footer magic and trailer (footer offset f64, count u32, CRC u32, magic). */
export const SEG_MAGIC_V1 = Buffer.from('SGHSEG01');
export const FOOT_MAGIC_V1 = Buffer.from('SGHFOOT1');
export const TRAILER = 24;
/** First format's footer entry: series u32, kind u32, offset f64, len u32, count u32, minTs f64, maxTs f64. */
export const FOOTER_ENTRY = 40;
/**
 * Sealed in place: SEAL_MAGIC right after the log's blocks; trailer = data end f64, directory offset f64, the
 * segment's oldest and newest sample time f64 ×2, entry count u32, CRC u32 (trailer's first 36 bytes after
 * the directory), magic.
 */
export const SEAL_MAGIC = Buffer.from('SGHSEAL2');
export const FOOT_MAGIC_V2 = Buffer.from('SGHFOOT2');
export const TRAILER_V2 = 48;
/**
 * Directory entry sealed in place: series u32, kind u8, 3 reserved, offset u32, len u32, count u32. No time span
 * per series: the segment's is in the trailer (a fleet's seal has an entry per series, so 20 bytes instead of
 * 40 is ~5% of the samples' bytes).
 */
export const DIR_ENTRY = 20;
/**
 * Directory entries a page, of which a segment sealed in place keeps only the first series in memory: an entry
 * is found with one read of a page or two (~2.5 KB) instead of holding the whole directory (17 B an entry, ~1.5 MB
 * a segment for 1,000 × 100 points).
 */
const DIR_PAGE = 64;

abstract class SegmentBase {
  bytes = 0;
  minTs = Infinity;
  maxTs = -Infinity;
  /** Queries in flight; a retired file is unlinked only when this drops to zero. */
  refs = 0;
  retired = false;

  constructor(readonly seq: number, readonly path: string) {}

  overlaps(start: number, endEx: number): boolean {
    return this.maxTs >= start && this.minTs < endEx;
  }
}

/**
 * The most blocks a log holds before the store rolls it: bounds its index below (24 bytes a block, 3 MB), and the
 * index's columns grow by doubling up to exactly this, so a full log's index has no unused half.
 */
export const MAX_LOG_BLOCKS = 131_072;

/**
 * Growable typed-array index of a log's blocks: series, file offset (u32: a log is a few MB; sealed segments
 * address blocks with u32 too), length, earliest sample time and the span to the latest (u32: a block's time
 * offsets are u32 by the format).
 */
export class LogSegment extends SegmentBase {
  readonly type = 'log';
  private n = 0;
  private series = new Uint32Array(256);
  private offset = new Uint32Array(256);
  private len = new Uint32Array(256);
  private bmin = new Float64Array(256);
  private span = new Uint32Array(256);

  get blocks(): number {
    return this.n;
  }

  add(e: BlockEntry, base: number): void {
    this.addBlock(e.series, base + e.offset, e.len, e.minTs, e.maxTs);
  }

  /** One block at file offset `offset` (the flush indexes its blocks from columns, without an object each). */
  addBlock(series: number, offset: number, len: number, minTs: number, maxTs: number): void {
    if (this.n === this.series.length) this.grow();
    const i = this.n++;
    this.series[i] = series;
    this.offset[i] = offset;
    this.len[i] = len;
    this.bmin[i] = minTs;
    this.span[i] = Math.min(Math.ceil(maxTs - minTs), MAX_DELTA);
    if (minTs < this.minTs) this.minTs = minTs;
    if (maxTs > this.maxTs) this.maxTs = maxTs;
  }

  /** Raw samples of one series from the first `upTo` blocks (a query's snapshot). */
  async readRaw(series: number, start: number, endEx: number, upTo: number, out: Samples): Promise<void> {
    const ranges: [number, number][] = [];
    for (let i = 0; i < upTo; i++) {
      if (this.series[i] !== series || this.bmin[i]! + this.span[i]! < start || this.bmin[i]! >= endEx) continue;
      const from = this.offset[i]!;
      const to = from + this.len[i]!;
      const last = ranges[ranges.length - 1];
      if (last && from - last[1] < MERGE_GAP) last[1] = to;
      else ranges.push([from, to]);
    }
    if (!ranges.length) return;
    const fh = await openLog(this.path);
    if (!fh) return;
    try {
      for (const [from, to] of ranges) {
        const buf = await readAt(fh, from, to - from);
        for (let off = 0; off + HEADER_BYTES <= buf.length;) {
          const meta = parseHeader(buf, off);
          if (!meta) break;
          if (meta.series === series && checkBlock(buf, off, meta)) decodeSamples(buf, off, meta, start, endEx, out);
          off += HEADER_BYTES + meta.payloadLen;
        }
      }
    } finally {
      await fh.close();
    }
  }

  private grow(): void {
    const had = this.series.length;
    // Past the roll limit (a log recovered from another configuration) a quarter at a time, not double.
    const size = had < MAX_LOG_BLOCKS ? Math.min(had * 2, MAX_LOG_BLOCKS) : had + (had >> 2);
    this.series = grown(this.series, size);
    this.offset = grown(this.offset, size);
    this.len = grown(this.len, size);
    this.bmin = grown(this.bmin, size);
    this.span = grown(this.span, size);
  }
}

/** One directory entry of a series: its kind, where its block (first format) or block list is, and its samples. */
interface DirEntry {
  kind: number;
  offset: number;
  len: number;
  count: number;
}

/**
 * A sealed segment's directory, sorted by series and searched by bisection: in the first format held whole in
 * typed arrays, sealed in place kept on disk with the first series of each page in memory. In the first
 * format a sample entry addresses one block; sealed in place (`lists`), it addresses the u32 list of the
 * series' block offsets. Rollup entries address one rollup block in both.
 */
export class SealedSegment extends SegmentBase {
  readonly type = 'sealed';
  /** Sealed in place: sample entries address block lists, and the directory stays on disk but for its pages' first series. */
  private lists = false;
  private dirAt = 0;
  private dirCount = 0;
  private pageFirst = new Uint32Array(0);
  /** The entries of the series looked up last (a query asks for one series several times: levels, then data). */
  private lastLookup: { series: number; entries: Promise<DirEntry[]> } | null = null;
  /** First format: the whole directory in columns. */
  private series = new Uint32Array(0);
  private kind = new Uint8Array(0);
  private offset = new Uint32Array(0);
  private len = new Uint32Array(0);
  private count = new Uint32Array(0);

  /** Loads the directory; null when the file is not a whole sealed segment of either format. */
  static async load(seq: number, path: string): Promise<SealedSegment | null> {
    const fh = await open(path, 'r');
    try {
      const size = (await fh.stat()).size;
      if (size < TRAILER + FOOT_MAGIC_V1.length) return null;
      const magic = await readAt(fh, size - FOOT_MAGIC_V1.length, FOOT_MAGIC_V1.length);
      const seg = new SealedSegment(seq, path);
      seg.bytes = size;
      seg.lists = magic.equals(FOOT_MAGIC_V2);
      const ok = seg.lists ? await seg.loadV2(fh, size) : magic.equals(FOOT_MAGIC_V1) && await seg.loadV1(fh, size);
      return ok ? seg : null;
    } finally {
      await fh.close();
    }
  }

  /** Raw samples (numbers and text) of a series in [start, endEx). */
  async readRaw(series: number, start: number, endEx: number, out: Samples): Promise<void> {
    // The caller picked this segment for overlapping the range; samples outside it are skipped as decoded.
    const entries = (await this.entriesOf(series)).filter((e) => e.kind === KIND_NUM || e.kind === KIND_STR);
    if (!entries.length) return;
    const fh = await open(this.path, 'r');
    try {
      for (const e of entries) {
        const visit = (buf: Buffer, off: number): void => {
          const meta = parseHeader(buf, off);
          if (meta && meta.series === series && sampleKind(meta.kind) === e.kind && checkBlock(buf, off, meta)) {
            decodeSamples(buf, off, meta, start, endEx, out);
          }
        };
        if (!this.lists) {
          const buf = await readAt(fh, e.offset, e.len);
          visit(buf, 0);
          continue;
        }
        const list = await readAt(fh, e.offset, e.len);
        const offsets: number[] = [];
        for (let p = 0; p + 4 <= list.length; p += 4) offsets.push(list.readUInt32LE(p));
        // A numeric block's size follows from its count; blocks of one flush are alike, so the average is a
        // good first read (text: a guess), and a longer block is read whole from its header.
        const guess = HEADER_BYTES + (e.kind === KIND_NUM ? NUM_RECORD * Math.ceil(e.count / Math.max(1, offsets.length)) : 4096);
        await readBlocks(fh, offsets, guess, visit);
      }
    } finally {
      await fh.close();
    }
  }

  /** True when the segment holds rollups of this level (KIND_MINUTE / KIND_HOUR) for the series. */
  async hasRollups(series: number, kind: number): Promise<boolean> {
    return (await this.entriesOf(series)).some((e) => e.kind === kind);
  }

  /** Rollup records of one kind (flat, ROLLUP_FIELDS per record, ascending), or an empty array. */
  async readRollups(series: number, kind: number): Promise<Float64Array> {
    for (const e of await this.entriesOf(series)) {
      if (e.kind !== kind) continue;
      const fh = await open(this.path, 'r');
      let buf: Buffer;
      try {
        buf = await readAt(fh, e.offset, e.len);
      } finally {
        await fh.close();
      }
      const meta = parseHeader(buf, 0);
      if (!meta || !checkBlock(buf, 0, meta)) break;
      const copy = new Float64Array(meta.count * ROLLUP_FIELDS);
      for (let j = 0; j < copy.length; j++) copy[j] = buf.readDoubleLE(HEADER_BYTES + j * 8);
      return copy;
    }
    return new Float64Array(0);
  }

  private columns(count: number): void {
    this.series = new Uint32Array(count);
    this.kind = new Uint8Array(count);
    this.offset = new Uint32Array(count);
    this.len = new Uint32Array(count);
    this.count = new Uint32Array(count);
  }

  /** First format: `SGHSEG01` at the start, footer + 24-byte trailer at the end. */
  private async loadV1(fh: FileHandle, size: number): Promise<boolean> {
    if (size < SEG_MAGIC_V1.length + TRAILER) return false;
    const head = await readAt(fh, 0, SEG_MAGIC_V1.length);
    const trailer = await readAt(fh, size - TRAILER, TRAILER);
    if (!head.equals(SEG_MAGIC_V1)) return false;
    const at = trailer.readDoubleLE(0);
    const n = trailer.readUInt32LE(8);
    if (at + n * FOOTER_ENTRY !== size - TRAILER) return false;
    const dir = await readAt(fh, at, n * FOOTER_ENTRY);
    if (crc32(dir) !== trailer.readUInt32LE(12)) return false;
    this.columns(n);
    for (let i = 0; i < n; i++) {
      const p = i * FOOTER_ENTRY;
      this.series[i] = dir.readUInt32LE(p);
      this.kind[i] = dir.readUInt32LE(p + 4);
      this.offset[i] = dir.readDoubleLE(p + 8);
      this.len[i] = dir.readUInt32LE(p + 16);
      this.count[i] = dir.readUInt32LE(p + 20);
      this.minTs = Math.min(this.minTs, dir.readDoubleLE(p + 24));
      this.maxTs = Math.max(this.maxTs, dir.readDoubleLE(p + 32));
    }
    return true;
  }

  /** Sealed in place: SEAL_MAGIC where the log's blocks end, directory + trailer at the end. */
  private async loadV2(fh: FileHandle, size: number): Promise<boolean> {
    if (size < SEAL_MAGIC.length + TRAILER_V2) return false;
    const trailer = await readAt(fh, size - TRAILER_V2, TRAILER_V2);
    const dataEnd = trailer.readDoubleLE(0);
    const at = trailer.readDoubleLE(8);
    const n = trailer.readUInt32LE(32);
    if (at + n * DIR_ENTRY !== size - TRAILER_V2 || !(dataEnd >= 0 && dataEnd + SEAL_MAGIC.length <= at)) return false;
    if (!(await readAt(fh, dataEnd, SEAL_MAGIC.length)).equals(SEAL_MAGIC)) return false;
    const dir = await readAt(fh, at, n * DIR_ENTRY);
    if (crc32(trailer.subarray(0, 36), crc32(dir)) !== trailer.readUInt32LE(36)) return false;
    this.minTs = trailer.readDoubleLE(16);
    this.maxTs = trailer.readDoubleLE(24);
    // The directory is checked whole (its CRC) but kept as its pages' first series only (entries are in series order).
    this.dirAt = at;
    this.dirCount = n;
    this.pageFirst = new Uint32Array(Math.ceil(n / DIR_PAGE));
    for (let k = 0; k < this.pageFirst.length; k++) this.pageFirst[k] = dir.readUInt32LE(k * DIR_PAGE * DIR_ENTRY);
    return true;
  }

  /** The series' directory entries, in directory order. */
  private entriesOf(series: number): Promise<DirEntry[]> {
    if (this.lastLookup?.series !== series) {
      const entries = this.lists ? this.readEntries(series) : Promise.resolve(this.columnEntries(series));
      this.lastLookup = { series, entries };
      // A failed read is not remembered: the next query reads again.
      entries.catch(() => {
        if (this.lastLookup?.entries === entries) this.lastLookup = null;
      });
    }
    return this.lastLookup.entries;
  }

  private columnEntries(series: number): DirEntry[] {
    const i0 = lowerBound(this.series, this.series.length, series);
    const out: DirEntry[] = [];
    for (let i = i0; i < this.series.length && this.series[i] === series; i++) {
      out.push({ kind: this.kind[i]!, offset: this.offset[i]!, len: this.len[i]!, count: this.count[i]! });
    }
    return out;
  }

  /** From the directory on disk: the page before the first one starting at or past `series` holds its first entry, if any. */
  private async readEntries(series: number): Promise<DirEntry[]> {
    const out: DirEntry[] = [];
    let i = Math.max(0, lowerBound(this.pageFirst, this.pageFirst.length, series) - 1) * DIR_PAGE;
    const fh = await open(this.path, 'r');
    try {
      while (i < this.dirCount) {
        const m = Math.min(2 * DIR_PAGE, this.dirCount - i);
        const buf = await readAt(fh, this.dirAt + i * DIR_ENTRY, m * DIR_ENTRY);
        if (buf.length < m * DIR_ENTRY) break;
        for (let p = 0; p < buf.length; p += DIR_ENTRY, i++) {
          const s = buf.readUInt32LE(p);
          if (s > series) return out;
          if (s === series) out.push({ kind: buf[p + 4]!, offset: buf.readUInt32LE(p + 8), len: buf.readUInt32LE(p + 12), count: buf.readUInt32LE(p + 16) });
        }
      }
    } finally {
      await fh.close();
    }
    return out;
  }
}

/** The first index in `a[0, n)` (ascending) whose value is at least `v`. */
function lowerBound(a: Uint32Array, n: number, v: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid]! < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export type Segment = LogSegment | SealedSegment;
