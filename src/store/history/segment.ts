/**
 * The two kinds of segment file.
 *
 * - LogSegment (`<seq>.log`): the append target. One block per series per flush, so writes are
 *   sequential (SD-card friendly); its block index lives in memory, bounded by the roll limits.
 * - SealedSegment (`<seq>.seg`): a rolled log rewritten grouped by series, with per-minute and per-hour
 *   rollups and a footer index, so a query costs one read per series per segment.
 */
import { open } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import type { BlockEntry } from './block-writer.js';
import {
  HEADER_BYTES, KIND_NUM, KIND_STR, ROLLUP_FIELDS, type Samples, checkBlock, decodeSamples, parseHeader,
} from './format.js';
import { readAt } from './scan.js';
import { grown } from '../../util/grow-typed.js';

export const SEG_MAGIC = Buffer.from('SGHSEG01');
export const FOOT_MAGIC = Buffer.from('SGHFOOT1');
export const FOOTER_ENTRY = 40;
export const TRAILER = 24;
/** Reads of nearby log blocks are merged when the gap between them is below this. */
const MERGE_GAP = 64 * 1024;

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

/** Growable typed-array index of a log's blocks. */
export class LogSegment extends SegmentBase {
  readonly type = 'log';
  private n = 0;
  private series = new Uint32Array(256);
  private kind = new Uint8Array(256);
  private offset = new Float64Array(256);
  private len = new Uint32Array(256);
  private bmin = new Float64Array(256);
  private bmax = new Float64Array(256);

  get blocks(): number {
    return this.n;
  }

  add(e: BlockEntry, base: number): void {
    this.addBlock(e.series, e.kind, base + e.offset, e.len, e.minTs, e.maxTs);
  }

  /** One block at file offset `offset` (the flush indexes its blocks from columns, without an object each). */
  addBlock(series: number, kind: number, offset: number, len: number, minTs: number, maxTs: number): void {
    if (this.n === this.series.length) this.grow();
    const i = this.n++;
    this.series[i] = series;
    this.kind[i] = kind;
    this.offset[i] = offset;
    this.len[i] = len;
    this.bmin[i] = minTs;
    this.bmax[i] = maxTs;
    if (minTs < this.minTs) this.minTs = minTs;
    if (maxTs > this.maxTs) this.maxTs = maxTs;
  }

  /** Raw samples of one series from the first `upTo` blocks (a query's snapshot). */
  async readRaw(series: number, start: number, endEx: number, upTo: number, out: Samples): Promise<void> {
    const ranges: [number, number][] = [];
    for (let i = 0; i < upTo; i++) {
      if (this.series[i] !== series || this.bmax[i]! < start || this.bmin[i]! >= endEx) continue;
      const from = this.offset[i]!;
      const to = from + this.len[i]!;
      const last = ranges[ranges.length - 1];
      if (last && from - last[1] < MERGE_GAP) last[1] = to;
      else ranges.push([from, to]);
    }
    if (!ranges.length) return;
    const fh = await open(this.path, 'r');
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
    const size = this.series.length * 2;
    this.series = grown(this.series, size);
    this.kind = grown(this.kind, size);
    this.offset = grown(this.offset, size);
    this.len = grown(this.len, size);
    this.bmin = grown(this.bmin, size);
    this.bmax = grown(this.bmax, size);
  }
}

/** A sealed segment's footer, kept as typed arrays sorted by (series, kind) and searched by bisection. */
export class SealedSegment extends SegmentBase {
  readonly type = 'sealed';
  private series = new Uint32Array(0);
  private kind = new Uint32Array(0);
  private offset = new Float64Array(0);
  private len = new Uint32Array(0);
  private bmin = new Float64Array(0);
  private bmax = new Float64Array(0);

  /** Loads the footer; null when the file is not a whole sealed segment. */
  static async load(seq: number, path: string): Promise<SealedSegment | null> {
    const fh = await open(path, 'r');
    try {
      const size = (await fh.stat()).size;
      if (size < SEG_MAGIC.length + TRAILER) return null;
      const head = await readAt(fh, 0, SEG_MAGIC.length);
      const trailer = await readAt(fh, size - TRAILER, TRAILER);
      if (!head.equals(SEG_MAGIC) || !trailer.subarray(16).equals(FOOT_MAGIC)) return null;
      const footerOff = trailer.readDoubleLE(0);
      const count = trailer.readUInt32LE(8);
      if (footerOff + count * FOOTER_ENTRY !== size - TRAILER) return null;
      const foot = await readAt(fh, footerOff, count * FOOTER_ENTRY);
      if (crc32(foot) !== trailer.readUInt32LE(12)) return null;
      const seg = new SealedSegment(seq, path);
      seg.bytes = size;
      seg.series = new Uint32Array(count);
      seg.kind = new Uint32Array(count);
      seg.offset = new Float64Array(count);
      seg.len = new Uint32Array(count);
      seg.bmin = new Float64Array(count);
      seg.bmax = new Float64Array(count);
      for (let i = 0; i < count; i++) {
        const p = i * FOOTER_ENTRY;
        seg.series[i] = foot.readUInt32LE(p);
        seg.kind[i] = foot.readUInt32LE(p + 4);
        seg.offset[i] = foot.readDoubleLE(p + 8);
        seg.len[i] = foot.readUInt32LE(p + 16);
        seg.bmin[i] = foot.readDoubleLE(p + 24);
        seg.bmax[i] = foot.readDoubleLE(p + 32);
        if (seg.bmin[i]! < seg.minTs) seg.minTs = seg.bmin[i]!;
        if (seg.bmax[i]! > seg.maxTs) seg.maxTs = seg.bmax[i]!;
      }
      return seg;
    } finally {
      await fh.close();
    }
  }

  /** Raw samples (numbers and text) of a series in [start, endEx). */
  async readRaw(series: number, start: number, endEx: number, out: Samples): Promise<void> {
    for (const i of this.entriesOf(series)) {
      const k = this.kind[i]!;
      if ((k !== KIND_NUM && k !== KIND_STR) || this.bmax[i]! < start || this.bmin[i]! >= endEx) continue;
      const buf = await this.readBlock(i);
      const meta = buf && parseHeader(buf, 0);
      if (buf && meta && checkBlock(buf, 0, meta)) decodeSamples(buf, 0, meta, start, endEx, out);
    }
  }

  /** Rollup records of one kind (flat, ROLLUP_FIELDS per record, ascending), or an empty array. */
  async readRollups(series: number, kind: number): Promise<Float64Array> {
    for (const i of this.entriesOf(series)) {
      if (this.kind[i] !== kind) continue;
      const buf = await this.readBlock(i);
      const meta = buf && parseHeader(buf, 0);
      if (!buf || !meta || !checkBlock(buf, 0, meta)) break;
      const copy = new Float64Array(meta.count * ROLLUP_FIELDS);
      for (let j = 0; j < copy.length; j++) copy[j] = buf.readDoubleLE(HEADER_BYTES + j * 8);
      return copy;
    }
    return new Float64Array(0);
  }

  private entriesOf(series: number): number[] {
    let lo = 0;
    let hi = this.series.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (this.series[mid]! < series) lo = mid + 1;
      else hi = mid;
    }
    const out: number[] = [];
    for (let i = lo; i < this.series.length && this.series[i] === series; i++) out.push(i);
    return out;
  }

  private async readBlock(i: number): Promise<Buffer | null> {
    const fh = await open(this.path, 'r');
    try {
      const buf = await readAt(fh, this.offset[i]!, this.len[i]!);
      return buf.length === this.len[i] ? buf : null;
    } finally {
      await fh.close();
    }
  }
}

export type Segment = LogSegment | SealedSegment;
