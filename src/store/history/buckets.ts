/**
 * Aggregation buckets labelled by their start. Intervals shorter than a day are aligned on the epoch
 * (InfluxDB's GROUP BY time() rule); days and weeks on local midnights in the gateway's time zone (the
 * process's TZ), so "energy per day" counts a user's calendar day — 23 or 25 hours across a DST change,
 * starting at 18:30 UTC in India — and weeks start on Monday. Partial aggregates (raw samples,
 * minute/hour rollups) merge into the same arrays, so any mix of sources gives the answer a full scan would.
 */
export const AGG_FUNCTIONS = ['avg', 'min', 'max', 'sum', 'count', 'first', 'last'] as const;
export type AggFunction = (typeof AGG_FUNCTIONS)[number];

export const isAggFunction = (s: string): s is AggFunction => (AGG_FUNCTIONS as readonly string[]).includes(s);

const DAY = 86_400_000;
/** 1970-01-05, a Monday, as a day number: weeks start on Monday (ISO 8601). */
const MONDAY = 4;

/**
 * Bucket edges for a whole-day interval (N days, or N weeks when a multiple of 7): local midnights from the
 * one at or before `start` to the first at or after `endEx`. N-day buckets are aligned on calendar day
 * numbers since 1970-01-01 (so they do not move with the query's start). Null for other intervals.
 */
export function localDayEdges(start: number, endEx: number, interval: number): number[] | null {
  if (interval % DAY !== 0 || interval <= 0) return null;
  const days = interval / DAY;
  const s = new Date(start);
  // The calendar day number (DST-free): Date.UTC of the local date.
  const dayNo = Date.UTC(s.getFullYear(), s.getMonth(), s.getDate()) / DAY;
  const anchor = days % 7 === 0 ? MONDAY : 0;
  const back = (((dayNo - anchor) % days) + days) % days;
  let y = s.getFullYear();
  let m = s.getMonth();
  let d = s.getDate() - back;
  const edges: number[] = [];
  for (;;) {
    // new Date(y, m, d) normalises overflowing days and lands on local midnight (or the first instant after
    // it where midnight does not exist).
    const t = new Date(y, m, d).getTime();
    edges.push(t);
    if (t >= endEx) break;
    const next = new Date(y, m, d + days);
    y = next.getFullYear();
    m = next.getMonth();
    d = next.getDate();
  }
  if (edges.length === 1) edges.push(new Date(y, m, d + days).getTime());
  return edges;
}

export interface TimedValue {
  ts: number;
  value: number | string;
}

export class Buckets {
  readonly first0: number;
  readonly n: number;
  private readonly count: Float64Array;
  private readonly min: Float64Array;
  private readonly max: Float64Array;
  private readonly sum: Float64Array;
  private readonly first: Float64Array;
  private readonly firstTs: Float64Array;
  private readonly last: Float64Array;
  private readonly lastTs: Float64Array;

  /** Bucket starts plus the last bucket's end, for local days and weeks (null: uniform epoch-aligned buckets). */
  readonly edges: number[] | null;

  /** Buckets covering [start, endEx); the caller bounds their number. */
  constructor(readonly start: number, readonly endEx: number, readonly interval: number) {
    this.edges = localDayEdges(start, endEx, interval);
    this.first0 = this.edges ? this.edges[0]! : Math.floor(start / interval) * interval;
    this.n = this.edges ? this.edges.length - 1 : Math.max(0, Math.ceil((endEx - this.first0) / interval));
    this.count = new Float64Array(this.n);
    this.min = new Float64Array(this.n).fill(Infinity);
    this.max = new Float64Array(this.n).fill(-Infinity);
    this.sum = new Float64Array(this.n);
    this.first = new Float64Array(this.n);
    this.firstTs = new Float64Array(this.n);
    this.last = new Float64Array(this.n);
    this.lastTs = new Float64Array(this.n);
  }

  /** Number of buckets a range needs (checked before allocating). */
  static countFor(start: number, endEx: number, interval: number): number {
    // Local days are 23–25 h long: one more than the epoch count bounds them.
    return Math.ceil((endEx - Math.floor(start / interval) * interval) / interval) + (interval % DAY === 0 ? 1 : 0);
  }

  /** Whether every bucket edge falls on a multiple of `g` (a rollup of that size then nests in one bucket). */
  alignedTo(g: number): boolean {
    return this.edges ? this.edges.every((e) => e % g === 0) : this.interval % g === 0;
  }

  private index(ts: number): number {
    const e = this.edges;
    if (!e) return Math.floor((ts - this.first0) / this.interval);
    let lo = 0;
    let hi = e.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (e[mid]! <= ts) lo = mid;
      else hi = mid - 1;
    }
    return ts < e[0]! ? -1 : lo;
  }

  addSample(ts: number, v: number): void {
    if (ts < this.start || ts >= this.endEx) return;
    this.merge(this.index(ts), 1, v, v, v, v, ts, v, ts);
  }

  /** A rollup whose bucket lies wholly inside [start, endEx) and inside one interval bucket. */
  addRollup(r: Float64Array, at: number): void {
    const bucketStart = r[at]!;
    if (bucketStart < this.start || bucketStart >= this.endEx) return;
    this.merge(this.index(bucketStart), r[at + 1]!, r[at + 2]!, r[at + 3]!, r[at + 4]!,
      r[at + 5]!, r[at + 7]!, r[at + 6]!, r[at + 8]!);
  }

  rows(fn: AggFunction): TimedValue[] {
    const out: TimedValue[] = [];
    for (let i = 0; i < this.n; i++) {
      const c = this.count[i]!;
      if (!c) continue;
      out.push({ ts: this.edges ? this.edges[i]! : this.first0 + i * this.interval, value: this.value(fn, i, c) });
    }
    return out;
  }

  private value(fn: AggFunction, i: number, c: number): number {
    switch (fn) {
      case 'avg': return this.sum[i]! / c;
      case 'min': return this.min[i]!;
      case 'max': return this.max[i]!;
      case 'sum': return this.sum[i]!;
      case 'count': return c;
      case 'first': return this.first[i]!;
      case 'last': return this.last[i]!;
    }
  }

  private merge(i: number, c: number, mn: number, mx: number, sm: number, fv: number, fts: number, lv: number,
    lts: number): void {
    if (i < 0 || i >= this.n || c <= 0) return;
    const had = this.count[i]!;
    this.count[i] = had + c;
    if (mn < this.min[i]!) this.min[i] = mn;
    if (mx > this.max[i]!) this.max[i] = mx;
    this.sum[i] = this.sum[i]! + sm;
    // Ties on time: the earlier-merged part is first, the later-merged part is last (sources merge in time order).
    if (!had || fts < this.firstTs[i]!) {
      this.first[i] = fv;
      this.firstTs[i] = fts;
    }
    if (!had || lts >= this.lastTs[i]!) {
      this.last[i] = lv;
      this.lastTs[i] = lts;
    }
  }
}
