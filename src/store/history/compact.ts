/**
 * Seals a rolled log in place. The blocks the flushes appended stay where they are and become the sealed
 * segment's data; the seal appends only what queries need to find them and what saves them raw reads:
 *
 *   [log blocks][SEAL_MAGIC][block lists][rollup blocks][directory][trailer]
 *
 * - block lists: per (series, kind), the u32 file offsets of its blocks in write order;
 * - rollup blocks: per-minute and per-hour rollups of a numeric series, written only where a level holds at
 *   least ROLLUP_MIN_SAMPLES samples per record (elsewhere reading the raw samples is about as cheap);
 * - directory: DIR_ENTRY bytes per (series, kind) — a list's or a rollup block's place and its sample count;
 * - trailer (TRAILER_V2): where the data ends and the directory starts, the segment's time span, entry count,
 *   CRC, FOOT_MAGIC_V2.
 *
 * Rewriting the log grouped by series (the first format) wrote every sample twice; this writes each once.
 * Crash safety: the tail is appended to `<seq>.log`, fsynced, then the file is renamed `<seq>.seg` and the
 * directory fsynced. A crash before the rename leaves the log with a partial tail, which the next start cuts
 * back (recover.ts: a log never holds SEAL_MAGIC or rollup blocks); after it, the whole sealed segment.
 * Series deleted before the seal are left out of the directory: their blocks stay in the file, unreachable,
 * until the segment expires or is evicted by the disk cap.
 */
import { open, rename, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import { BlockWriter } from './block-writer.js';
import {
  HEADER_BYTES, HOUR, KIND_HOUR, KIND_MINUTE, KIND_NUM, KIND_STR, MINUTE, ROLLUP_FIELDS, blockMaxTs, checkBlock,
  decodeSamples, emptySamples, isSampleKind, parseHeader, sampleKind, type Samples,
} from './format.js';
import { DIR_ENTRY, FOOT_MAGIC_V2, SEAL_MAGIC, TRAILER_V2 } from './segment.js';
import { writeAt } from './scan.js';
import { grown } from '../../util/grow-typed.js';
import { TurnBudget } from '../../util/turn-budget.js';

/**
 * A rollup level is written for a series when it holds at least this many samples per record: a record is
 * 72 bytes, six samples' worth, so rollups then add at most ~10% to the raw bytes they summarize. A 1 Hz point
 * gets hour rollups but no minute rollups (60 a minute): a minute-interval aggregate reads its samples raw.
 */
export const ROLLUP_MIN_SAMPLES = 64;

/**
 * Seals the log at `logPath` whose whole blocks end at `dataEnd`, renaming it to `outPath`. Returns the bytes
 * it appended; 0 when the log held no live series (nothing is written; the caller removes the log).
 */
export async function sealLog(logPath: string, dataEnd: number, outPath: string, isLive: (series: number) => boolean,
  scratch: SealScratch = { buf: null }): Promise<number> {
  const fh = await open(logPath, 'r+');
  let renamed = false;
  try {
    const log = await readLog(fh, dataEnd, scratch);
    const tail = await buildTail(log, isLive, scratch);
    if (!tail) return 0;
    try {
      // A seal that failed earlier (a full disk) may have left part of a tail: the new one replaces it.
      await fh.truncate(log.length);
      await writeAt(fh, tail, log.length);
      await fh.sync();
    } catch (err) {
      await fh.truncate(log.length).catch(() => {});
      throw err;
    }
    await fh.close();
    await rename(logPath, outPath);
    renamed = true;
    await syncDir(dirname(outPath));
    return tail.length;
  } finally {
    if (!renamed) await fh.close().catch(() => {});
  }
}

/** The bytes appended after the log's blocks; null when no live series has a block in it. */
async function buildTail(log: Buffer, isLive: (series: number) => boolean, scratch: SealScratch): Promise<Buffer | null> {
  // Every loop yields to the event loop every few ms (util/turn-budget.ts): an 8 MiB log is ~700k samples.
  const budget = new TurnBudget();
  const index = scratch.index ?? (scratch.index = new BlockIndex());
  index.n = 0;
  for (let pos = 0, blocks = 0; pos + HEADER_BYTES <= log.length; blocks++) {
    if (blocks % 1024 === 0) await budget.maybeYield();
    const meta = parseHeader(log, pos);
    if (!meta || pos + HEADER_BYTES + meta.payloadLen > log.length || !checkBlock(log, pos, meta)) break;
    if (isLive(meta.series) && isSampleKind(meta.kind)) index.push(pos, meta.series, sampleKind(meta.kind));
    pos += HEADER_BYTES + meta.payloadLen;
  }
  if (!index.n) return null;
  const offsets = index.offsets.subarray(0, index.n);
  const series = index.series.subarray(0, index.n);
  const kinds = index.kinds.subarray(0, index.n);
  // Blocks grouped by (series, kind), each group in write order (offsets ascend).
  const order = groupOrder(series, kinds, offsets);
  await budget.maybeYield();

  const listsAt = log.length + SEAL_MAGIC.length;
  const lists = Buffer.allocUnsafe(4 * index.n);
  const rollupsAt = listsAt + lists.length;
  const rolls = new BlockWriter();
  const dir = new DirectoryBytes();
  let segMin = Infinity;
  let segMax = -Infinity;
  for (let r = 0; r < order.length;) {
    const s = series[order[r]!]!;
    const kind = kinds[order[r]!]!;
    const first = r;
    let count = 0;
    let minTs = Infinity;
    let maxTs = -Infinity;
    for (; r < order.length && series[order[r]!] === s && kinds[order[r]!] === kind; r++) {
      const off = offsets[order[r]!]!;
      const meta = parseHeader(log, off)!;
      lists.writeUInt32LE(off, 4 * r);
      count += meta.count;
      if (meta.baseTs < minTs) minTs = meta.baseTs;
      const last = blockMaxTs(log, off, meta);
      if (last > maxTs) maxTs = last;
    }
    dir.add(s, kind, listsAt + 4 * first, 4 * (r - first), count);
    segMin = Math.min(segMin, minTs);
    segMax = Math.max(segMax, maxTs);
    if (kind === KIND_NUM && count >= ROLLUP_MIN_SAMPLES) {
      const samples = emptySamples();
      for (let j = first; j < r; j++) {
        const off = offsets[order[j]!]!;
        decodeSamples(log, off, parseHeader(log, off)!, -Infinity, Infinity, samples);
      }
      const { ts, val } = sortByTime(samples);
      for (const [size, level] of [[MINUTE, KIND_MINUTE], [HOUR, KIND_HOUR]] as const) {
        const recs = rollups(ts, val as number[], size);
        if (count < ROLLUP_MIN_SAMPLES * (recs.length / ROLLUP_FIELDS)) continue;
        rolls.addRollups(level, s, recs);
        const e = rolls.entries.pop()!;
        dir.add(s, level, rollupsAt + e.offset, e.len, e.count);
      }
    }
    await budget.maybeYield();
  }
  const rollBytes = rolls.take();
  const directory = dir.bytes();
  const trailer = Buffer.alloc(TRAILER_V2);
  trailer.writeDoubleLE(log.length, 0);
  trailer.writeDoubleLE(rollupsAt + rollBytes.length, 8);
  trailer.writeDoubleLE(segMin, 16);
  trailer.writeDoubleLE(segMax, 24);
  trailer.writeUInt32LE(dir.count, 32);
  trailer.writeUInt32LE(crc32(trailer.subarray(0, 36), crc32(directory)), 36);
  FOOT_MAGIC_V2.copy(trailer, 40);
  return Buffer.concat([SEAL_MAGIC, lists, rollBytes, directory, trailer]);
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

/** The directory's entries as bytes (DIR_ENTRY each, layout in segment.ts), in series order. */
class DirectoryBytes {
  count = 0;
  private buf = Buffer.alloc(64 * DIR_ENTRY);

  add(series: number, kind: number, offset: number, len: number, count: number): void {
    const p = this.count * DIR_ENTRY;
    if (p + DIR_ENTRY > this.buf.length) {
      const next = Buffer.alloc(this.buf.length * 2);
      this.buf.copy(next, 0, 0, p);
      this.buf = next;
    }
    const b = this.buf;
    b.writeUInt32LE(series, p);
    b[p + 4] = kind;
    b.writeUInt32LE(offset, p + 8);
    b.writeUInt32LE(len, p + 12);
    b.writeUInt32LE(count, p + 16);
    this.count++;
  }

  bytes(): Buffer {
    return this.buf.subarray(0, this.count * DIR_ENTRY);
  }
}

/** The log's bytes up to `dataEnd` (its whole blocks), read into the kept buffer. */
async function readLog(fh: FileHandle, dataEnd: number, scratch: SealScratch): Promise<Buffer> {
  const size = Math.min(dataEnd, (await fh.stat()).size);
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
