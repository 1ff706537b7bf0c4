/** Fixed-capacity write buffer (typed arrays): memory is set by config, never by uptime or traffic. */
import type { Samples } from './format.js';

export class SampleBuffer {
  length = 0;
  /** Columns of the samples [0, length): read by the flush (flush-blocks.ts), written only by push. */
  readonly series: Uint32Array;
  readonly ts: Float64Array;
  readonly num: Float64Array;
  readonly text: (string | undefined)[];

  constructor(readonly capacity: number) {
    this.series = new Uint32Array(capacity);
    this.ts = new Float64Array(capacity);
    this.num = new Float64Array(capacity);
    this.text = new Array<string | undefined>(capacity);
  }

  get full(): boolean {
    return this.length >= this.capacity;
  }

  /** False when full: the caller counts the sample as dropped. */
  push(series: number, ts: number, value: number | string): boolean {
    if (this.length >= this.capacity) return false;
    const i = this.length++;
    this.series[i] = series;
    this.ts[i] = ts;
    if (typeof value === 'number') {
      this.num[i] = value;
      this.text[i] = undefined;
    } else {
      this.text[i] = value;
    }
    return true;
  }

  clear(): void {
    this.text.fill(undefined, 0, this.length);
    this.length = 0;
  }

  /** Copies one series' samples in [start, endEx) into `out` (queries see data before it is flushed). */
  collect(series: number, start: number, endEx: number, out: Samples): void {
    for (let i = 0; i < this.length; i++) {
      if (this.series[i] !== series) continue;
      const t = this.ts[i]!;
      if (t < start || t >= endEx) continue;
      out.ts.push(t);
      out.val.push(this.text[i] ?? this.num[i]!);
    }
  }
}
