/**
 * When each byte heard on a line was on the wire, from when the chunks it came in were read: the doctor's
 * judge of t1.5 and t3.5 (Modbus over serial line §2.5.1.1). Pure: chunks and their times are handed in.
 *
 * A read hands over what the UART (or a USB adapter's buffer) collected, stamped when it was read: the last
 * byte of a chunk was on the wire a moment before the stamp, each earlier one a character time before the
 * next. Within a chunk nothing can be told (the adapter kept the bytes), so only the silence across two
 * chunks is measured — and not when the chunk came faster than its own bytes take on the wire (a pty, an
 * adapter that had held bytes back): those stamps say nothing about the wire. `jitterMs` is how late a
 * stamp may be (the event loop, an adapter's latency timer); a gap is judged only beyond it.
 */
import { charMs, silenceMs } from '../../../protocol/modbus/wire-cost.js';

interface Chunk { first: number; n: number; at: number }

/** What the silence before a byte was, as far as the stamps tell. */
export type Gap = { known: false } | { known: true; ms: number };

export class ByteClock {
  readonly charMs: number;
  /** t3.5: the least silence between frames. */
  readonly t35: number;
  /** t1.5: the most silence inside a frame (750 µs above 19,200 baud, as t3.5 is fixed there). */
  readonly t15: number;
  private chunks: Chunk[] = [];
  private total = 0;

  constructor(baudRate: number, readonly jitterMs: number) {
    this.charMs = charMs(baudRate);
    this.t35 = silenceMs(baudRate);
    this.t15 = baudRate > 19_200 ? 0.75 : 1.5 * this.charMs;
  }

  /** `n` bytes read at `at` (ms); returns the index of the first of them among all bytes heard. */
  add(n: number, at: number): number {
    const first = this.total;
    this.chunks.push({ first, n, at });
    this.total += n;
    return first;
  }

  /** Forgets chunks that end before byte `index` (keeping the one before it: the silence before it is measured from there). */
  forgetBefore(index: number): void {
    let k = 0;
    while (k + 1 < this.chunks.length && this.chunks[k + 1]!.first + this.chunks[k + 1]!.n <= index) k++;
    if (k > 0) this.chunks = this.chunks.slice(k);
  }

  /** The silence on the wire between byte `index - 1` and byte `index`. */
  gapBefore(index: number): Gap {
    const at = this.chunkOf(index);
    const before = this.chunkOf(index - 1);
    if (!at || !before || at === before || index !== at.first) return { known: false };
    // The chunk's first byte began `n` characters before its stamp; the previous chunk's last byte ended at its stamp.
    const ms = at.at - at.n * this.charMs - before.at;
    return ms < -this.jitterMs ? { known: false } : { known: true, ms };
  }

  /** Whether a silence inside a frame, `ms`, is longer than t1.5 beyond what the stamps' jitter explains. */
  tooLongInFrame(ms: number): boolean {
    return ms > this.t15 + this.jitterMs;
  }

  /** Whether a silence between frames, `ms`, is shorter than t3.5 beyond what the stamps' jitter explains. */
  tooShortBetween(ms: number): boolean {
    return ms < this.t35 - this.jitterMs;
  }

  private chunkOf(index: number): Chunk | undefined {
    if (index < 0) return undefined;
    for (let k = this.chunks.length - 1; k >= 0; k--) {
      const c = this.chunks[k]!;
      if (c.first <= index) return index < c.first + c.n ? c : undefined;
    }
    return undefined;
  }
}
