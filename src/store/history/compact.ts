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
 * The tail is written as it is built (seal-tail.ts): SEAL_MAGIC first, then the lists, rollups and directory,
 * each region through a small stage to its planned place, so the seal never holds the tail whole.
 * Crash safety: the tail is appended to `<seq>.log`, fsynced, then the file is renamed `<seq>.seg` and the
 * directory fsynced. A crash before the rename leaves the log with a partial tail, which the next start cuts
 * back (recover.ts: a log never holds SEAL_MAGIC or rollup blocks); after it, the whole sealed segment.
 * Series deleted before the seal are left out of the directory: their blocks stay in the file, unreachable,
 * until the segment expires or is evicted by the disk cap.
 */
import { open, rename, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import {
  type BlockMeta, HEADER_BYTES, KIND_NUM, NUM16_RECORD, NUM_RECORD, ROLLUP_FIELDS, blockMaxTs, checkBlock,
  decodeSamples, emptySamples, isSampleKind, parseHeader, sampleKind, type Samples,
} from './format.js';
import { groupOrderSteps } from './group-order.js';
import { LogWindow, WINDOW_BYTES } from './log-window.js';
import { LEVELS, RollupStream } from './rollup-stream.js';
import { newStages, writeTail, type SealPlan, type TailStages } from './seal-tail.js';
import { readAt } from './scan.js';
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
    const size = Math.min(dataEnd, (await fh.stat()).size);
    const budget = new TurnBudget(SEAL_SLICE_MS);
    const plan = await planTail(fh, size, isLive, scratch, budget);
    if (!plan) return 0;
    let bytes = 0;
    try {
      // A seal that failed earlier (a full disk) may have left part of a tail: the new one replaces it.
      await fh.truncate(size);
      bytes = await writeTail(fh, size, plan, scratch.stages ??= newStages(), budget);
      await fh.sync();
    } catch (err) {
      await fh.truncate(size).catch(() => {});
      throw err;
    }
    await fh.close();
    await rename(logPath, outPath);
    renamed = true;
    await syncDir(dirname(outPath));
    return bytes;
  } finally {
    if (!renamed) await fh.close().catch(() => {});
  }
}

/** Blocks between two looks at the clock: a block's CRC is a few µs, so a slice overruns its budget by well under 1 ms. */
const CHECK_EVERY = 64;
/**
 * A seal's slice of a turn, half the default: a seal is background work, and in fleet F the same turn may also
 * carry a flush's slice, a batch of device polls and their MQTT publishes, so the seal takes the smaller share.
 */
const SEAL_SLICE_MS = 4;

/**
 * What the seal appends after the log's first `size` bytes, planned; null when no live series has a block in it.
 * Two passes through one window (log-window.ts): the first indexes the blocks, the second feeds the samples of the
 * series that get rollups to a RollupStream; then an out-of-order series' blocks are read again. The tail itself
 * is written from the plan (seal-tail.ts). Every loop yields to the event loop every few ms (util/turn-budget.ts).
 */
async function planTail(fh: FileHandle, size: number, isLive: (series: number) => boolean, scratch: SealScratch,
  budget: TurnBudget): Promise<SealPlan | null> {
  const index = scratch.index ?? (scratch.index = new BlockIndex());
  index.n = 0;
  const win = new LogWindow(fh, size, scratch.buf ?? Buffer.allocUnsafe(WINDOW_BYTES));
  for (let pos = 0, blocks = 0; ; blocks++) {
    if (blocks % CHECK_EVERY === 0) await budget.maybeYield();
    const meta = win.held(pos) ?? await win.block(pos);
    if (!meta) break;
    const rel = pos - win.base();
    if (!checkBlock(win.view, rel, meta)) break;
    if (isLive(meta.series) && isSampleKind(meta.kind)) {
      index.push(pos, meta.series, sampleKind(meta.kind), meta.count, meta.baseTs, blockMaxTs(win.view, rel, meta));
    }
    pos += HEADER_BYTES + meta.payloadLen;
  }
  scratch.buf = win.buffer;
  if (!index.n) return null;
  const n = index.n;
  const { offsets, series, kinds, counts, minTs, spans } = index;
  // Blocks grouped by (series, kind), each group in write order (offsets ascend).
  const steps = groupOrderSteps(series.subarray(0, n), kinds.subarray(0, n), offsets.subarray(0, n));
  let step = steps.next();
  for (; !step.done; step = steps.next()) await budget.maybeYield();
  const order = step.value;

  // The numeric series with enough samples for rollups get a slot; their blocks are marked with it.
  const slotOf = index.slots();
  const slotCounts: number[] = [];
  /** Per slot, where its group starts and ends in `order`. */
  const slotGroups: [first: number, end: number][] = [];
  let groupCount = 0;
  for (let r = 0; r < n; groupCount++) {
    if (groupCount % CHECK_EVERY === 0) await budget.maybeYield();
    const first = r;
    const s = series[order[r]!]!;
    const kind = kinds[order[r]!]!;
    let count = 0;
    for (; r < n && series[order[r]!] === s && kinds[order[r]!] === kind; r++) count += counts[order[r]!]!;
    if (kind !== KIND_NUM || count < ROLLUP_MIN_SAMPLES) continue;
    for (let j = first; j < r; j++) slotOf[order[j]!] = slotCounts.length;
    slotCounts.push(count);
    slotGroups.push([first, r]);
  }
  const stream = new RollupStream(Uint32Array.from(slotCounts), ROLLUP_MIN_SAMPLES);
  if (slotCounts.length) {
    for (let i = 0; i < n; i++) {
      if (i % CHECK_EVERY === 0) await budget.maybeYield();
      const slot = slotOf[i]!;
      if (slot < 0) continue;
      const meta = win.held(offsets[i]!) ?? await win.block(offsets[i]!);
      if (!meta) throw new Error(`history log: the block at ${offsets[i]} changed during its seal`);
      feedBlock(win.view, offsets[i]! - win.base(), meta, slot, stream);
    }
    stream.finish();
  }
  scratch.buf = win.buffer;
  const unordered = new Map<number, (number[] | null)[]>();
  for (let slot = 0; slot < slotCounts.length; slot++) {
    if (!stream.unordered[slot]) continue;
    const [first, end] = slotGroups[slot]!;
    unordered.set(slot, await sortedRollups(fh, order.subarray(first, end), offsets, slotCounts[slot]!));
  }
  return { n, offsets, series, kinds, counts, minTs, spans, order, slotOf, groupCount, stream, unordered };
}

/** The numeric samples of one block, to the stream. */
function feedBlock(buf: Buffer, off: number, meta: BlockMeta, slot: number, stream: RollupStream): void {
  const wide = meta.kind === KIND_NUM;
  const rec = wide ? NUM_RECORD : NUM16_RECORD;
  for (let i = 0, p = off + HEADER_BYTES; i < meta.count; i++, p += rec) {
    stream.add(slot, meta.baseTs + (wide ? buf.readUInt32LE(p) : buf.readUInt16LE(p)), buf.readDoubleLE(p + rec - 8));
  }
}

/**
 * Rollups of a series whose samples are not in time order in the log (a clock set back): its blocks read again
 * one by one, its samples sorted. Per level, null where the level does not pay.
 */
async function sortedRollups(fh: FileHandle, blocks: Uint32Array, offsets: Uint32Array, count: number): Promise<(number[] | null)[]> {
  const samples = emptySamples();
  for (const b of blocks) {
    const meta = parseHeader(await readAt(fh, offsets[b]!, HEADER_BYTES), 0);
    if (!meta) continue;
    decodeSamples(await readAt(fh, offsets[b]!, HEADER_BYTES + meta.payloadLen), 0, meta, -Infinity, Infinity, samples);
  }
  const { ts, val } = sortByTime(samples);
  return LEVELS.map(([size]) => {
    const recs = rollups(ts, val as number[], size);
    return count < ROLLUP_MIN_SAMPLES * (recs.length / ROLLUP_FIELDS) ? null : recs;
  });
}

/**
 * The window a seal reads its log through, kept from seal to seal by the store. A fresh buffer per seal
 * outlived the seal's many young-generation collections, so it was freed only by a later full collection: RSS
 * stepped by its size around a seal; one kept buffer holds it flat.
 */
export interface SealScratch {
  buf: Buffer | null;
  /** The log's block index, kept likewise (29 bytes a block: ≤ 3.8 MB at the store's 131,072 blocks a log). */
  index?: BlockIndex;
  /** The tail's three staging buffers (seal-tail.ts), kept likewise. */
  stages?: TailStages;
}

/** Per block of the log, in file order: offset, series, kind, sample count and time span, in typed columns that grow and are kept. */
class BlockIndex {
  n = 0;
  offsets = new Uint32Array(4096);
  series = new Uint32Array(4096);
  kinds = new Uint8Array(4096);
  counts = new Uint32Array(4096);
  minTs = new Float64Array(4096);
  /** Latest sample time less minTs (a block's time offsets are u32 by the format). */
  spans = new Uint32Array(4096);
  private slotCol = new Int32Array(0);

  push(offset: number, series: number, kind: number, count: number, minTs: number, maxTs: number): void {
    if (this.n === this.offsets.length) {
      const size = this.n * 2;
      this.offsets = grown(this.offsets, size);
      this.series = grown(this.series, size);
      this.kinds = grown(this.kinds, size);
      this.counts = grown(this.counts, size);
      this.minTs = grown(this.minTs, size);
      this.spans = grown(this.spans, size);
    }
    const i = this.n++;
    this.offsets[i] = offset;
    this.series[i] = series;
    this.kinds[i] = kind;
    this.counts[i] = count;
    this.minTs[i] = minTs;
    this.spans[i] = maxTs - minTs;
  }

  /** A column of -1 per block, for the seal to mark blocks with their rollup slot. */
  slots(): Int32Array {
    if (this.slotCol.length < this.n) this.slotCol = new Int32Array(this.offsets.length);
    const col = this.slotCol.subarray(0, this.n);
    col.fill(-1);
    return col;
  }
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
