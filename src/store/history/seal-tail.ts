/**
 * Writes a seal's tail (layout in compact.ts) as it is built: the block lists, the rollup blocks and the directory
 * each go through their own cursor (tail-cursor.ts) to the place they take in the file, which is known before the
 * first byte because every rollup's size is (the stream holds the records' count, an unordered series' rollups are
 * computed first). The bytes are those the seal wrote when it held the tail whole; only the order the regions
 * reach the file differs, which the fsync before the rename makes invisible.
 */
import type { FileHandle } from 'node:fs/promises';
import { crc32 } from 'node:zlib';
import { HEADER_BYTES, ROLLUP_FIELDS, ROLLUP_RECORD, sealHeader } from './format.js';
import { LEVELS, type RollupStream } from './rollup-stream.js';
import { DIR_ENTRY, FOOT_MAGIC_V2, SEAL_MAGIC, TRAILER_V2 } from './segment.js';
import { STAGE_BYTES, TailCursor } from './tail-cursor.js';
import { writeAt } from './scan.js';
import type { TurnBudget } from '../../util/turn-budget.js';

/** What the seal's passes over the log found: its live blocks, grouped, and the rollups of the series that get them. */
export interface SealPlan {
  /** Live blocks, in file order. */
  n: number;
  offsets: Uint32Array;
  series: Uint32Array;
  kinds: Uint8Array;
  counts: Uint32Array;
  minTs: Float64Array;
  spans: Uint32Array;
  /** Block indexes grouped by (series, kind), each group in write order. */
  order: Uint32Array;
  /** Per block, its series' rollup slot, or -1. */
  slotOf: Int32Array;
  groupCount: number;
  stream: RollupStream;
  /** Rollups per level of the slots whose samples were out of time order, read again and sorted (null: does not pay). */
  unordered: Map<number, (number[] | null)[]>;
}

/** Groups between two looks at the clock, as the seal's other loops. */
const CHECK_EVERY = 64;

/** The stages the three regions write through, kept from seal to seal with the seal's window. */
export type TailStages = [Buffer, Buffer, Buffer];

export const newStages = (): TailStages => [Buffer.allocUnsafe(STAGE_BYTES), Buffer.allocUnsafe(STAGE_BYTES), Buffer.allocUnsafe(STAGE_BYTES)];

/** Appends the tail after the log's first `size` bytes; returns the bytes appended. The caller fsyncs. */
export async function writeTail(fh: FileHandle, size: number, plan: SealPlan, stages: TailStages, budget: TurnBudget): Promise<number> {
  const { n, offsets, series, kinds, counts, minTs, spans, order, slotOf, stream } = plan;
  const recordsOf = (slot: number, l: number): number => {
    const sorted = plan.unordered.get(slot);
    return sorted ? (sorted[l]?.length ?? 0) / ROLLUP_FIELDS : stream.recordCount(slot, l);
  };
  // Every region's place, before the first byte: the rollups' sizes come from their record counts.
  let rollBytes = 0;
  let rollEntries = 0;
  for (let slot = 0; slot < stream.unordered.length; slot++) {
    for (let l = 0; l < LEVELS.length; l++) {
      const c = recordsOf(slot, l);
      if (!c) continue;
      rollBytes += HEADER_BYTES + c * ROLLUP_RECORD;
      rollEntries++;
    }
  }
  const listsAt = size + SEAL_MAGIC.length;
  const rollupsAt = listsAt + 4 * n;
  const dirAt = rollupsAt + rollBytes;
  const entries = plan.groupCount + rollEntries;
  // The marker first, on its own: a crash at any later point leaves a log that recover.ts knows as a seal cut short.
  await writeAt(fh, SEAL_MAGIC, size);
  const lists = new TailCursor(fh, listsAt, stages[0]);
  const rolls = new TailCursor(fh, rollupsAt, stages[1]);
  const dir = new TailCursor(fh, dirAt, stages[2]);
  const entry = async (s: number, kind: number, offset: number, len: number, count: number): Promise<void> => {
    if (!dir.fits(DIR_ENTRY)) await dir.flush();
    const b = dir.buf;
    const p = dir.take(DIR_ENTRY);
    b.writeUInt32LE(s, p);
    b[p + 4] = kind;
    b.fill(0, p + 5, p + 8);
    b.writeUInt32LE(offset, p + 8);
    b.writeUInt32LE(len, p + 12);
    b.writeUInt32LE(count, p + 16);
  };
  let segMin = Infinity;
  let segMax = -Infinity;
  for (let r = 0, groups = 0; r < n; groups++) {
    if (groups % CHECK_EVERY === 0) await budget.maybeYield();
    const s = series[order[r]!]!;
    const kind = kinds[order[r]!]!;
    const first = r;
    const listAt = lists.pos;
    let count = 0;
    let lo = Infinity;
    let hi = -Infinity;
    for (; r < n && series[order[r]!] === s && kinds[order[r]!] === kind; r++) {
      const b = order[r]!;
      if (!lists.fits(4)) await lists.flush();
      lists.buf.writeUInt32LE(offsets[b]!, lists.take(4));
      count += counts[b]!;
      if (minTs[b]! < lo) lo = minTs[b]!;
      if (minTs[b]! + spans[b]! > hi) hi = minTs[b]! + spans[b]!;
    }
    await entry(s, kind, listAt, 4 * (r - first), count);
    segMin = Math.min(segMin, lo);
    segMax = Math.max(segMax, hi);
    const slot = slotOf[order[first]!]!;
    if (slot < 0) continue;
    for (let l = 0; l < LEVELS.length; l++) {
      const c = recordsOf(slot, l);
      if (!c) continue;
      const len = HEADER_BYTES + c * ROLLUP_RECORD;
      if (!rolls.fits(len)) await rolls.flush();
      const at = rolls.pos;
      const off = rolls.take(len);
      const buf = rolls.buf; // after take(): a block larger than the stage gets a buffer of its own
      const sorted = plan.unordered.get(slot)?.[l];
      if (sorted) for (let i = 0; i < sorted.length; i++) buf.writeDoubleLE(sorted[i]!, off + HEADER_BYTES + i * 8);
      else stream.writeRecords(slot, l, buf, off + HEADER_BYTES);
      // A block's base time is its first record's bucket start, as the block writer gives it.
      sealHeader(buf, off, LEVELS[l]![1], s, c, c * ROLLUP_RECORD, buf.readDoubleLE(off + HEADER_BYTES));
      await entry(s, LEVELS[l]![1], at, len, c);
    }
  }
  await lists.flush();
  await rolls.flush();
  await dir.flush();
  if (lists.pos !== rollupsAt || rolls.pos !== dirAt || dir.pos !== dirAt + entries * DIR_ENTRY) {
    throw new Error(`history seal: the tail's regions came out at ${lists.pos}/${rolls.pos}/${dir.pos}, planned ${rollupsAt}/${dirAt}/${dirAt + entries * DIR_ENTRY}`);
  }
  const trailer = Buffer.alloc(TRAILER_V2);
  trailer.writeDoubleLE(size, 0);
  trailer.writeDoubleLE(dirAt, 8);
  trailer.writeDoubleLE(segMin, 16);
  trailer.writeDoubleLE(segMax, 24);
  trailer.writeUInt32LE(entries, 32);
  trailer.writeUInt32LE(crc32(trailer.subarray(0, 36), dir.crc), 36);
  FOOT_MAGIC_V2.copy(trailer, 40);
  await writeAt(fh, trailer, dir.pos);
  return dir.pos + TRAILER_V2 - size;
}
