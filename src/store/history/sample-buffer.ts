/** Fixed-capacity write buffer (typed arrays): memory is set by config, never by uptime or traffic. */
import type { Samples } from './format.js';

/** In `dt`: the time is in `farTimes` (more than ~24.8 days from the buffer's first sample, a clock stepped; or not whole ms). */
const FAR = -0x80000000;

export class SampleBuffer {
  length = 0;
  /** Columns of the samples [0, length): read by the flush (flush-blocks.ts), written only by push. */
  readonly series: Uint32Array;
  readonly num: Float64Array;
  /**
   * Sample times as ms from the first sample's (`time(i)` adds it back): 4 B a sample instead of 8, in each of
   * the two buffers of up to max_points samples (0.8 MB for fleet F). The store rounds times to whole ms.
   */
  private readonly dt: Int32Array;
  private base = 0;
  private farTimes: Map<number, number> | null = null;
  /**
   * 1 where sample i is text: its `num` is then its index in `texts`, which holds only the buffer's strings.
   * A slot array of `capacity` entries cost 8 B a sample in each of the two buffers (1.6 MB at 100k).
   */
  private readonly isText: Uint8Array;
  private texts: string[] = [];

  constructor(readonly capacity: number) {
    this.series = new Uint32Array(capacity);
    this.dt = new Int32Array(capacity);
    this.num = new Float64Array(capacity);
    this.isText = new Uint8Array(capacity);
  }

  get full(): boolean {
    return this.length >= this.capacity;
  }

  /** False when full: the caller counts the sample as dropped. */
  push(series: number, ts: number, value: number | string): boolean {
    if (this.length >= this.capacity) return false;
    const i = this.length++;
    this.series[i] = series;
    if (i === 0) this.base = ts;
    const d = ts - this.base;
    // A whole number of ms within ±2^31 of the first (a fraction, as from a test's clock, is kept exactly too).
    if ((d | 0) === d && d !== FAR) {
      this.dt[i] = d;
    } else {
      this.dt[i] = FAR;
      (this.farTimes ??= new Map()).set(i, ts);
    }
    if (typeof value === 'number') {
      this.num[i] = value;
      this.isText[i] = 0;
    } else {
      this.num[i] = this.texts.push(value) - 1;
      this.isText[i] = 1;
    }
    return true;
  }

  clear(): void {
    this.texts = [];
    this.farTimes = null;
    this.length = 0;
  }

  /** The time of sample `i`, ms. */
  time(i: number): number {
    const d = this.dt[i]!;
    return d === FAR ? this.farTimes!.get(i)! : this.base + d;
  }

  /** The text of sample `i`, or undefined when it is numeric. */
  textAt(i: number): string | undefined {
    return this.isText[i] === 1 ? this.texts[this.num[i]!] : undefined;
  }

  /** Copies one series' samples in [start, endEx) into `out` (queries see data before it is flushed). */
  collect(series: number, start: number, endEx: number, out: Samples): void {
    for (let i = 0; i < this.length; i++) {
      if (this.series[i] !== series) continue;
      const t = this.time(i);
      if (t < start || t >= endEx) continue;
      out.ts.push(t);
      out.val.push(this.textAt(i) ?? this.num[i]!);
    }
  }
}
