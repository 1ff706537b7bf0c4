/** Fixed-capacity write buffer (typed arrays): memory is set by config, never by uptime or traffic. */
import { BlockWriter } from './block-writer.js';
import type { Samples } from './format.js';

export class SampleBuffer {
  length = 0;
  private readonly series: Uint32Array;
  private readonly ts: Float64Array;
  private readonly num: Float64Array;
  private readonly text: (string | undefined)[];

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

  /** Encodes the buffer as one block per live series and kind, ready for a single append. */
  encode(isLive: (series: number) => boolean): BlockWriter {
    const groups = new Map<number, number[]>();
    for (let i = 0; i < this.length; i++) {
      const s = this.series[i]!;
      let g = groups.get(s);
      if (!g) groups.set(s, (g = []));
      g.push(i);
    }
    const writer = new BlockWriter();
    for (const [s, idx] of groups) {
      if (!isLive(s)) continue;
      const nts: number[] = [];
      const nval: number[] = [];
      const sts: number[] = [];
      const sval: string[] = [];
      for (const i of idx) {
        const text = this.text[i];
        if (text === undefined) {
          nts.push(this.ts[i]!);
          nval.push(this.num[i]!);
        } else {
          sts.push(this.ts[i]!);
          sval.push(text);
        }
      }
      if (nts.length) writer.addNum(s, nts, nval);
      if (sts.length) writer.addStr(s, sts, sval);
    }
    return writer;
  }
}
