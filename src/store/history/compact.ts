/**
 * Seals a rolled log: rewrites it grouped by series (time-ordered), adds per-minute and per-hour
 * rollups and a footer index. Written to a temp file, fsynced, then renamed, so a crash leaves either
 * the old log or the whole sealed segment, never half of one. Series deleted meanwhile are dropped.
 */
import { open, rename, rm, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import { BlockWriter } from './block-writer.js';
import { HEADER_BYTES, HOUR, KIND_HOUR, KIND_MINUTE, KIND_NUM, KIND_STR, MINUTE, ROLLUP_FIELDS, checkBlock, decodeSamples, emptySamples, parseHeader, type Samples } from './format.js';
import { FOOTER_ENTRY, FOOT_MAGIC, SEG_MAGIC, TRAILER } from './segment.js';
import { writeAt } from './scan.js';
import { grown } from '../../util/grow-typed.js';
import { TurnBudget } from '../../util/turn-budget.js';

/** Returns false when the log held no live data (then nothing is written). */
export async function compactLog(logPath: string, outPath: string, isLive: (series: number) => boolean,
  scratch: SealScratch = { buf: null }): Promise<boolean> {
  // The log is read whole (≤ segmentBytes) and only its blocks are indexed; each series' samples are decoded
  // when that series is written. Decoding the whole log first (an object and arrays per series, then flat
  // arrays of every sample) was a 30–100 MB heap spike at each seal of a 1,000 × 100 fleet (issue 16).
  const src = await open(logPath, 'r');
  let log: Buffer;
  try {
    log = await readLog(src, scratch);
  } finally {
    await src.close();
  }
  // Every loop below yields to the event loop every few ms (util/turn-budget.ts): a seal of an 8 MiB log is
  // 0.2–0.5 s of work on a fast x86 core, more on a Pi, and it held the loop for 60–100 ms at a time between
  // its writes (a bench of an 8.4 MiB fleet-F log; up to 170 ms in the soak's CPU profile).
  const budget = new TurnBudget();
  const index = scratch.index ?? (scratch.index = new BlockIndex());
  index.n = 0;
  for (let pos = 0, blocks = 0; pos + HEADER_BYTES <= log.length; blocks++) {
    if (blocks % 1024 === 0) await budget.maybeYield();
    const meta = parseHeader(log, pos);
    if (!meta || pos + HEADER_BYTES + meta.payloadLen > log.length || !checkBlock(log, pos, meta)) break; // a torn tail
    if (isLive(meta.series) && (meta.kind === KIND_NUM || meta.kind === KIND_STR)) index.push(pos, meta.series, meta.kind);
    pos += HEADER_BYTES + meta.payloadLen;
  }
  if (!index.n) return false;
  const offsets = index.offsets.subarray(0, index.n);
  const series = index.series.subarray(0, index.n);
  const kinds = index.kinds.subarray(0, index.n);
  // Blocks grouped by (series, kind), in the order they were written.
  const order = groupOrder(series, kinds, offsets);
  await budget.maybeYield();
  // The footer is built as the blocks go out: an entry object per block kept to the end was ~30k objects
  // living through the whole seal (promoted, then old-space garbage).
  const foot = new FooterBytes();
  const drain = (writer: BlockWriter): void => {
    for (const e of writer.entries) foot.add(e.series, e.kind, SEG_MAGIC.length + e.offset, e.len, e.count, e.minTs, e.maxTs);
    writer.entries.length = 0;
  };

  const tmp = `${outPath}.tmp`;
  const out = await open(tmp, 'w');
  try {
    await writeAt(out, SEG_MAGIC, 0);
    let pos = SEG_MAGIC.length;
    const writer = new BlockWriter();
    for (let r = 0; r < order.length;) {
      const s = series[order[r]!]!;
      const kind = kinds[order[r]!]!;
      const samples = emptySamples();
      for (; r < order.length && series[order[r]!] === s && kinds[order[r]!] === kind; r++) {
        const off = offsets[order[r]!]!;
        decodeSamples(log, off, parseHeader(log, off)!, -Infinity, Infinity, samples);
      }
      const { ts, val } = sortByTime(samples);
      if (kind === KIND_NUM) {
        writer.addNum(s, ts, val as number[]);
        writer.addRollups(KIND_MINUTE, s, rollups(ts, val as number[], MINUTE));
        writer.addRollups(KIND_HOUR, s, rollups(ts, val as number[], HOUR));
      } else {
        writer.addStr(s, ts, val as string[]);
      }
      if (writer.pending >= 1024 * 1024) {
        drain(writer);
        const chunk = writer.take();
        await writeAt(out, chunk, pos);
        pos += chunk.length;
      } else {
        await budget.maybeYield();
      }
    }
    drain(writer);
    const rest = writer.take();
    await writeAt(out, rest, pos);
    pos += rest.length;

    const footer = foot.bytes();
    const trailer = Buffer.alloc(TRAILER);
    trailer.writeDoubleLE(pos, 0);
    trailer.writeUInt32LE(foot.count, 8);
    trailer.writeUInt32LE(crc32(footer), 12);
    FOOT_MAGIC.copy(trailer, 16);
    await writeAt(out, Buffer.concat([footer, trailer]), pos);
    await out.sync();
  } catch (err) {
    await out.close().catch(() => {});
    await rm(tmp, { force: true });
    throw err;
  }
  await out.close();
  await rename(tmp, outPath);
  await syncDir(dirname(outPath));
  return true;
}

/**
 * The buffer a seal reads its log into, kept from seal to seal by the store. A fresh 8 MiB buffer per seal
 * outlived the seal's many young-generation collections, so it was freed only by a later full collection: RSS
 * stepped by the log's size around a seal, a spike the reduced soak's ±5% band can catch; one kept buffer
 * holds it flat.
 */
export interface SealScratch {
  buf: Buffer | null;
  /** The log's block index, kept likewise (≤ 131,072 blocks: ~1.2 MB). */
  index?: BlockIndex;
}

/** Offset, series and kind of each block of the log, in typed columns that grow and are kept. */
class BlockIndex {
  n = 0;
  offsets = new Uint32Array(4096);
  series = new Uint32Array(4096);
  kinds = new Uint8Array(4096);

  push(offset: number, series: number, kind: number): void {
    if (this.n === this.offsets.length) {
      const size = this.n * 2;
      this.offsets = grown(this.offsets, size);
      this.series = grown(this.series, size);
      this.kinds = grown(this.kinds, size);
    }
    this.offsets[this.n] = offset;
    this.series[this.n] = series;
    this.kinds[this.n] = kind;
    this.n++;
  }
}

/** The footer's entries as bytes (FOOTER_ENTRY each, layout in segment.ts), appended as blocks are written. */
class FooterBytes {
  count = 0;
  private buf = Buffer.allocUnsafe(64 * FOOTER_ENTRY);

  add(series: number, kind: number, offset: number, len: number, count: number, minTs: number, maxTs: number): void {
    const p = this.count * FOOTER_ENTRY;
    if (p + FOOTER_ENTRY > this.buf.length) {
      const next = Buffer.allocUnsafe(this.buf.length * 2);
      this.buf.copy(next, 0, 0, p);
      this.buf = next;
    }
    const b = this.buf;
    b.writeUInt32LE(series, p);
    b.writeUInt32LE(kind, p + 4);
    b.writeDoubleLE(offset, p + 8);
    b.writeUInt32LE(len, p + 16);
    b.writeUInt32LE(count, p + 20);
    b.writeDoubleLE(minTs, p + 24);
    b.writeDoubleLE(maxTs, p + 32);
    this.count++;
  }

  bytes(): Buffer {
    return this.buf.subarray(0, this.count * FOOTER_ENTRY);
  }
}

async function readLog(fh: FileHandle, scratch: SealScratch): Promise<Buffer> {
  const size = (await fh.stat()).size;
  // A log may run a little past segmentBytes (it rolls after the flush that crosses it): room to spare.
  if (!scratch.buf || scratch.buf.length < size) scratch.buf = Buffer.allocUnsafe(size + (size >> 3));
  const buf = scratch.buf;
  let got = 0;
  while (got < size) {
    const { bytesRead } = await fh.read(buf, got, size - got, got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return buf.subarray(0, got);
}

/**
 * Indices grouped by (series, kind), each group ordered by `times` (ties in arrival order). A counting
 * sort on the group key (O(n), typed arrays) and a sort only of the groups that arrived out of time order: a
 * comparison sort of a whole 8 MiB log (~600k samples) held the event loop for ~200 ms (issue 16's stall goal
 * is 50 ms).
 */
export function groupOrder(series: ArrayLike<number>, kinds: ArrayLike<number>, times: ArrayLike<number>): Uint32Array {
  const n = series.length;
  let maxKey = 0;
  const keys = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    const k = series[i]! * 2 + (kinds[i] === KIND_STR ? 1 : 0);
    keys[i] = k;
    if (k > maxKey) maxKey = k;
  }
  const start = new Uint32Array(maxKey + 2);
  for (let i = 0; i < n; i++) start[keys[i]! + 1]!++;
  for (let k = 1; k < start.length; k++) start[k]! += start[k - 1]!;
  const order = new Uint32Array(n);
  const next = start.slice(0, maxKey + 1);
  for (let i = 0; i < n; i++) order[next[keys[i]!]!++] = i;
  for (let k = 0; k <= maxKey; k++) {
    const a = start[k]!;
    const b = start[k + 1]!;
    let sorted = true;
    for (let j = a + 1; j < b; j++) {
      if (times[order[j]!]! < times[order[j - 1]!]!) {
        sorted = false;
        break;
      }
    }
    if (!sorted) order.subarray(a, b).sort((x, y) => times[x]! - times[y]! || x - y);
  }
  return order;
}

/** The rename is durable only once the directory entry is on disk. */
export async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } catch {
    // Some filesystems refuse fsync on a directory; the data file itself is already synced.
  } finally {
    await fh.close();
  }
}

/** Stable sort by time (equal times keep arrival order); a no-op for the usual already-ordered case. */
function sortByTime(s: Samples): Samples {
  for (let i = 1; i < s.ts.length; i++) {
    if (s.ts[i]! < s.ts[i - 1]!) {
      const idx = s.ts.map((_, k) => k).sort((a, b) => s.ts[a]! - s.ts[b]! || a - b);
      return { ts: idx.map((k) => s.ts[k]!), val: idx.map((k) => s.val[k]!) };
    }
  }
  return s;
}

/** Rollup records for time-ordered samples: bucketStart, count, min, max, sum, first, last, firstTs, lastTs. */
export function rollups(ts: readonly number[], val: readonly number[], size: number): number[] {
  const out: number[] = [];
  let bucket = NaN;
  let count = 0, min = 0, max = 0, sum = 0, first = 0, last = 0, firstTs = 0, lastTs = 0;
  const emit = (): void => {
    out.push(bucket, count, min, max, sum, first, last, firstTs, lastTs);
  };
  for (let i = 0; i < ts.length; i++) {
    const t = ts[i]!;
    const v = val[i]!;
    const b = Math.floor(t / size) * size;
    if (b !== bucket) {
      if (count) emit();
      bucket = b;
      count = 0;
      min = Infinity;
      max = -Infinity;
      sum = 0;
      first = v;
      firstTs = t;
    }
    count++;
    if (v < min) min = v;
    if (v > max) max = v;
    sum += v;
    last = v;
    lastTs = t;
  }
  if (count) emit();
  if (out.length % ROLLUP_FIELDS !== 0) throw new Error('rollup record size mismatch');
  return out;
}
