/** Query execution over a consistent snapshot: segments (with the log's block count frozen) + unflushed samples. */
import { type AggFunction, Buckets, type TimedValue } from './buckets.js';
import { HOUR, KIND_HOUR, KIND_MINUTE, MINUTE, ROLLUP_FIELDS, type Samples, emptySamples } from './format.js';
import type { Segment, SealedSegment } from './segment.js';

export interface Snapshot {
  /** Oldest first; `upTo` freezes a log's block count at snapshot time. */
  segs: { seg: Segment; upTo: number }[];
  /** Samples still in memory (not yet in any segment), copied synchronously at snapshot time. */
  mem: Samples;
}

async function readSeg(part: Snapshot['segs'][number], series: number, start: number, endEx: number, out: Samples): Promise<void> {
  if (part.seg.type === 'log') await part.seg.readRaw(series, start, endEx, part.upTo, out);
  else await part.seg.readRaw(series, start, endEx, out);
}

/** Raw samples ascending by time (stable: equal times keep write order), at most `limit`. */
export async function readRaw(snap: Snapshot, series: number, start: number, endEx: number, limit: number): Promise<TimedValue[]> {
  const all = emptySamples();
  for (const part of snap.segs) await readSeg(part, series, start, endEx, all);
  for (let i = 0; i < snap.mem.ts.length; i++) {
    all.ts.push(snap.mem.ts[i]!);
    all.val.push(snap.mem.val[i]!);
  }
  const rows: TimedValue[] = all.ts.map((ts, i) => ({ ts, value: all.val[i]! }));
  rows.sort((a, b) => a.ts - b.ts);
  return rows.length > limit ? rows.slice(0, limit) : rows;
}

/** Aggregates numeric samples into interval buckets; sealed segments answer from rollups where they can. */
export async function aggregate(snap: Snapshot, series: number, fn: AggFunction, interval: number, start: number,
  endEx: number): Promise<TimedValue[]> {
  const buckets = new Buckets(start, endEx, interval);
  // A rollup level can stand in for raw data only if its buckets nest inside the interval's buckets (local
  // days in a half-hour zone start at :30 UTC: hour rollups do not nest there, minute rollups do).
  const levels = [HOUR, MINUTE].filter((g) => buckets.alignedTo(g));
  for (const part of snap.segs) {
    const seg = part.seg;
    // A segment has only the levels that paid for this series (compact.ts); with none, its samples are read raw.
    const have: number[] = [];
    if (seg.type === 'sealed') for (const g of levels) if (await seg.hasRollups(series, g === HOUR ? KIND_HOUR : KIND_MINUTE)) have.push(g);
    if (seg.type === 'sealed' && have.length) {
      await fromSealed(seg, series, have, buckets);
    } else {
      const raw = emptySamples();
      await readSeg(part, series, start, endEx, raw);
      addRaw(raw, buckets, start, endEx);
    }
  }
  addRaw(snap.mem, buckets, start, endEx);
  return buckets.rows(fn);
}

function addRaw(s: Samples, b: Buckets, from: number, to: number): void {
  for (let i = 0; i < s.ts.length; i++) {
    const v = s.val[i];
    const t = s.ts[i]!;
    if (typeof v === 'number' && t >= from && t < to) b.addSample(t, v);
  }
}

/**
 * Splits the range into whole hours (hour rollups), whole minutes at the edges (minute rollups) and
 * sub-minute edges (raw), reading each part of this segment at most once.
 */
async function fromSealed(seg: SealedSegment, series: number, levels: number[], b: Buckets): Promise<void> {
  const top = levels[0]!;
  // Clamp to the segment's own span, widened to whole top-level buckets so edges stay rollup-aligned.
  const s0 = Math.max(b.start, Math.floor(seg.minTs / top) * top);
  const e0 = Math.min(b.endEx, Math.ceil((seg.maxTs + 1) / top) * top);
  let raw: Samples | null = null;
  const rolls = new Map<number, Float64Array>();

  const walk = async (s: number, e: number, li: number): Promise<void> => {
    if (s >= e) return;
    if (li >= levels.length) {
      if (!raw) {
        raw = emptySamples();
        await seg.readRaw(series, s0, e0, raw);
      }
      addRaw(raw, b, s, e);
      return;
    }
    const g = levels[li]!;
    const a = Math.ceil(s / g) * g;
    const z = Math.floor(e / g) * g;
    if (a >= z) return walk(s, e, li + 1);
    await walk(s, a, li + 1);
    const kind = g === HOUR ? KIND_HOUR : KIND_MINUTE;
    let recs = rolls.get(kind);
    if (!recs) rolls.set(kind, (recs = await seg.readRollups(series, kind)));
    for (let at = lowerBound(recs, a); at < recs.length && recs[at]! < z; at += ROLLUP_FIELDS) b.addRollup(recs, at);
    await walk(z, e, li + 1);
  };
  await walk(s0, e0, 0);
}

/** Offset of the first rollup record whose bucket start is >= t. */
function lowerBound(recs: Float64Array, t: number): number {
  let lo = 0;
  let hi = recs.length / ROLLUP_FIELDS;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (recs[mid * ROLLUP_FIELDS]! < t) lo = mid + 1;
    else hi = mid;
  }
  return lo * ROLLUP_FIELDS;
}
