/**
 * One flush of the sample buffer as log blocks (one per live series and kind), built into a buffer and
 * index columns that are reused from flush to flush. Fleet F flushes ~50k samples of ~10k series every ~5 s:
 * building them as a Map of arrays, a Buffer per block, an entry object per block and a concat took ~15
 * young-generation collections per flush with the unit's 1 MB semi-space (what survived them was promoted and
 * fed the old-space collections), in one synchronous stretch: 30–280 ms with GC in the soak's CPU profile.
 * Here the samples are grouped by a counting sort on typed arrays, written straight into the reused buffer,
 * and the work yields to the event loop every few ms (a bench of both on 50k samples: 8 ms against 19–31 ms,
 * the longest stretch 8 ms against 43 ms, and ~15 fewer scavenges per flush).
 */
import { BlockWriter } from './block-writer.js';
import { HEADER_BYTES, KIND_NUM, KIND_NUM16, KIND_STR, MAX_DELTA, MAX_DELTA16, NUM16_RECORD, NUM_RECORD, sealHeader } from './format.js';
import type { SampleBuffer } from './sample-buffer.js';
import { grown } from '../../util/grow-typed.js';
import { TurnBudget } from '../../util/turn-budget.js';

/** Bytes built before they are handed to the sink: a few syscalls per flush, a small buffer kept. */
const SPILL_AT = 256 << 10;
/** Groups between two looks at the clock (a group is a few µs: the clock is not read per sample). */
const CHECK_EVERY = 64;
/** Index entries kept at least: a flush of up to this many blocks never reallocates the columns. */
const MIN_ENTRIES = 1024;

export class FlushBlocks {
  /** Blocks built by the last build(); their index columns below (offsets from the build's first byte). */
  count = 0;
  /** Series in the last build's buffer, known before its first bytes reach the sink (about a block each). */
  groups = 0;
  series = new Uint32Array(MIN_ENTRIES);
  /** Byte offsets into one flush's buffer: far below 4 GiB, so 4 B an entry (an entry per series per flush). */
  offset = new Uint32Array(MIN_ENTRIES);
  len = new Uint32Array(MIN_ENTRIES);
  minTs = new Float64Array(MIN_ENTRIES);
  /** Latest minus earliest sample time of each block: at most MAX_DELTA (u32), which a block's offsets span. */
  span = new Uint32Array(MIN_ENTRIES);
  /** Room for a group past SPILL_AT (the spill is checked between groups), so steady flushes never regrow it. */
  private buf = Buffer.allocUnsafe(SPILL_AT + (16 << 10));
  private at = 0;
  /** Bytes of this build already handed to the sink: what `at` counts from. */
  private spilled = 0;
  private starts = new Uint32Array(0);
  private order = new Uint32Array(0);

  /** The blocks' bytes not handed to the sink (all of them without one): a view of the reused buffer, valid until the next build(). */
  get data(): Buffer {
    return this.buf.subarray(0, this.at);
  }

  /** Latest sample time of block `i`. */
  maxTsAt(i: number): number {
    return this.minTs[i]! + this.span[i]!;
  }

  /** Bytes of the last build's blocks, spilled ones included. */
  get bytes(): number {
    return this.spilled + this.at;
  }

  /**
   * Encodes every sample of `src` whose series is live; `src` must not change until this resolves. With a
   * `sink`, the bytes built so far are handed to it whenever they pass SPILL_AT (the rest stays in `data`):
   * a whole flush of fleet F in one buffer was 4 MB kept from flush to flush.
   */
  async build(src: SampleBuffer, isLive: (series: number) => boolean, budget = new TurnBudget(),
    sink?: (bytes: Buffer) => Promise<void>): Promise<void> {
    this.fit();
    this.count = 0;
    this.groups = 0;
    this.at = 0;
    this.spilled = 0;
    const n = src.length;
    if (n === 0) return;
    const order = this.groupBySeries(src);
    let groups = 0;
    for (let a = 0; a < n;) {
      const s = src.series[order[a]!]!;
      let b = a + 1;
      while (b < n && src.series[order[b]!] === s) b++;
      if (isLive(s)) this.addGroup(src, order, a, b, s);
      a = b;
      if (sink && this.at >= SPILL_AT) {
        await sink(this.buf.subarray(0, this.at));
        this.spilled += this.at;
        this.at = 0;
      }
      if (++groups % CHECK_EVERY === 0) await budget.maybeYield();
    }
  }

  /** Sample indices ordered by series, arrival order kept within a series (counting sort, O(n)). */
  private groupBySeries(src: SampleBuffer): Uint32Array {
    const n = src.length;
    let max = 0;
    for (let i = 0; i < n; i++) if (src.series[i]! > max) max = src.series[i]!;
    if (this.starts.length < max + 2) this.starts = new Uint32Array(Math.max(max + 2, this.starts.length * 2));
    if (this.order.length < n) this.order = new Uint32Array(Math.max(n, src.capacity));
    const starts = this.starts;
    starts.fill(0, 0, max + 2);
    for (let i = 0; i < n; i++) starts[src.series[i]! + 1]!++;
    this.groups = 0;
    for (let k = 1; k < max + 2; k++) if (starts[k]! > 0) this.groups++;
    for (let k = 1; k < max + 2; k++) starts[k]! += starts[k - 1]!;
    const order = this.order;
    for (let i = 0; i < n; i++) order[starts[src.series[i]!]!++] = i;
    return order;
  }

  private addGroup(src: SampleBuffer, order: Uint32Array, a: number, b: number, s: number): void {
    let nums = 0;
    let strs = 0;
    let nMin = Infinity, nMax = -Infinity, sMin = Infinity, sMax = -Infinity;
    for (let j = a; j < b; j++) {
      const i = order[j]!;
      const t = src.time(i);
      if (src.textAt(i) === undefined) {
        nums++;
        if (t < nMin) nMin = t;
        if (t > nMax) nMax = t;
      } else {
        strs++;
        if (t < sMin) sMin = t;
        if (t > sMax) sMax = t;
      }
    }
    // Times more than ~49 days apart in one flush (a clock set back or forward) need several blocks: the
    // general writer splits them. It never happens in steady running.
    if (nums && nMax - nMin > MAX_DELTA) this.viaWriter(src, order, a, b, s, false);
    else if (nums) this.numBlock(src, order, a, b, s, nums, nMin, nMax);
    if (strs && sMax - sMin > MAX_DELTA) this.viaWriter(src, order, a, b, s, true);
    else if (strs) this.strBlock(src, order, a, b, s, strs, sMin, sMax);
  }

  /** Numeric samples, with u16 time offsets when the block spans at most MAX_DELTA16 ms (nearly always). */
  private numBlock(src: SampleBuffer, order: Uint32Array, a: number, b: number, s: number, count: number, min: number, max: number): void {
    const narrow = max - min <= MAX_DELTA16;
    const kind = narrow ? KIND_NUM16 : KIND_NUM;
    const payload = count * (narrow ? NUM16_RECORD : NUM_RECORD);
    const off = this.reserve(HEADER_BYTES + payload);
    const buf = this.buf;
    let p = off + HEADER_BYTES;
    for (let j = a; j < b; j++) {
      const i = order[j]!;
      if (src.textAt(i) !== undefined) continue;
      if (narrow) {
        buf.writeUInt16LE(src.time(i) - min, p);
        buf.writeDoubleLE(src.num[i]!, p + 2);
        p += NUM16_RECORD;
      } else {
        buf.writeUInt32LE(src.time(i) - min, p);
        buf.writeDoubleLE(src.num[i]!, p + 4);
        p += NUM_RECORD;
      }
    }
    sealHeader(buf, off, kind, s, count, payload, min);
    this.index(s, off, HEADER_BYTES + payload, min, max);
  }

  private strBlock(src: SampleBuffer, order: Uint32Array, a: number, b: number, s: number, count: number, min: number, max: number): void {
    let payload = 0;
    for (let j = a; j < b; j++) {
      const text = src.textAt(order[j]!);
      if (text !== undefined) payload += 6 + Buffer.byteLength(text);
    }
    const off = this.reserve(HEADER_BYTES + payload);
    const buf = this.buf;
    let p = off + HEADER_BYTES;
    for (let j = a; j < b; j++) {
      const i = order[j]!;
      const text = src.textAt(i);
      if (text === undefined) continue;
      buf.writeUInt32LE(src.time(i) - min, p);
      const len = buf.write(text, p + 6, 'utf8');
      buf.writeUInt16LE(len, p + 4);
      p += 6 + len;
    }
    sealHeader(buf, off, KIND_STR, s, count, payload, min);
    this.index(s, off, HEADER_BYTES + payload, min, max);
  }

  private viaWriter(src: SampleBuffer, order: Uint32Array, a: number, b: number, s: number, text: boolean): void {
    const ts: number[] = [];
    const vals: (number | string)[] = [];
    for (let j = a; j < b; j++) {
      const i = order[j]!;
      const t = src.textAt(i);
      if ((t !== undefined) !== text) continue;
      ts.push(src.time(i));
      vals.push(t ?? src.num[i]!);
    }
    const w = new BlockWriter();
    if (text) w.addStr(s, ts, vals as string[]);
    else w.addNum(s, ts, vals as number[]);
    const bytes = w.take();
    const base = this.reserve(bytes.length);
    bytes.copy(this.buf, base);
    for (const e of w.entries) this.index(e.series, base + e.offset, e.len, e.minTs, e.maxTs);
  }

  /** Room for `bytes` more at the end; returns where they go. */
  private reserve(bytes: number): number {
    const off = this.at;
    if (off + bytes > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.max(off + bytes, this.buf.length * 2));
      this.buf.copy(next, 0, 0, off);
      this.buf = next;
    }
    this.at = off + bytes;
    return off;
  }

  private index(series: number, offset: number, len: number, minTs: number, maxTs: number): void {
    if (this.count === this.series.length) this.grow();
    const i = this.count++;
    this.series[i] = series;
    this.offset[i] = this.spilled + offset;
    this.len[i] = len;
    this.minTs[i] = minTs;
    this.span[i] = maxTs - minTs;
  }

  private grow(): void {
    const size = this.series.length * 2;
    this.series = grown(this.series, size);
    this.offset = grown(this.offset, size);
    this.len = grown(this.len, size);
    this.minTs = grown(this.minTs, size);
    this.span = grown(this.span, size);
  }

  /**
   * Back to twice the last build's blocks when it used under a quarter of the columns (called before a build,
   * when they are free): the first flush after a start holds a block for every point's first value (fleet F:
   * 100k, columns of 131,072 entries, 3 MB) and later ones a block per changing series (F: ~10k).
   */
  private fit(): void {
    const size = this.series.length;
    if (size <= MIN_ENTRIES || this.count * 4 >= size) return;
    const next = Math.max(MIN_ENTRIES, 2 ** Math.ceil(Math.log2(this.count * 2)));
    this.series = new Uint32Array(next);
    this.offset = new Uint32Array(next);
    this.len = new Uint32Array(next);
    this.minTs = new Float64Array(next);
    this.span = new Uint32Array(next);
  }
}
