/**
 * Aggregation buckets aligned to the interval on the epoch (InfluxDB's GROUP BY time() rule), labelled
 * by their start. Partial aggregates (raw samples, minute/hour rollups) merge into the same arrays,
 * so any mix of sources gives the answer a full scan would.
 */
export const AGG_FUNCTIONS = ['avg', 'min', 'max', 'sum', 'count', 'first', 'last'] as const;
export type AggFunction = (typeof AGG_FUNCTIONS)[number];

export const isAggFunction = (s: string): s is AggFunction => (AGG_FUNCTIONS as readonly string[]).includes(s);

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

  /** Buckets covering [start, endEx); the caller bounds their number. */
  constructor(readonly start: number, readonly endEx: number, readonly interval: number) {
    this.first0 = Math.floor(start / interval) * interval;
    this.n = Math.max(0, Math.ceil((endEx - this.first0) / interval));
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
    return Math.ceil((endEx - Math.floor(start / interval) * interval) / interval);
  }

  addSample(ts: number, v: number): void {
    if (ts < this.start || ts >= this.endEx) return;
    this.merge(Math.floor((ts - this.first0) / this.interval), 1, v, v, v, v, ts, v, ts);
  }

  /** A rollup whose bucket lies wholly inside [start, endEx) and inside one interval bucket. */
  addRollup(r: Float64Array, at: number): void {
    const bucketStart = r[at]!;
    if (bucketStart < this.start || bucketStart >= this.endEx) return;
    this.merge(Math.floor((bucketStart - this.first0) / this.interval), r[at + 1]!, r[at + 2]!, r[at + 3]!, r[at + 4]!,
      r[at + 5]!, r[at + 7]!, r[at + 6]!, r[at + 8]!);
  }

  rows(fn: AggFunction): TimedValue[] {
    const out: TimedValue[] = [];
    for (let i = 0; i < this.n; i++) {
      const c = this.count[i]!;
      if (!c) continue;
      out.push({ ts: this.first0 + i * this.interval, value: this.value(fn, i, c) });
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
