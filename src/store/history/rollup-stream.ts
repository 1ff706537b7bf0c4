/**
 * Minute and hour rollups of many series at once, fed their samples in the order a seal reads its log (front to
 * back, so a series' samples arrive block by block in write order). Each (series, level) holds only its open
 * record; closed records go to one shared column, ordered by series when the stream ends (an index of 4 bytes a
 * record, not a second copy of the 72-byte records: the copy was ~2 MB of a fleet's seal transient). The seal no longer
 * needs the whole log in memory to sort a series' samples: only a series whose samples arrive out of time order
 * (a clock set back) is left to the caller (`unordered`), which reads that series' blocks again.
 */
import { HOUR, KIND_HOUR, KIND_MINUTE, MINUTE, ROLLUP_FIELDS } from './format.js';
import { grown } from '../../util/grow-typed.js';

/** The levels, in the order their directory entries are written. */
export const LEVELS = [[MINUTE, KIND_MINUTE], [HOUR, KIND_HOUR]] as const;
const DEAD = 0xffffffff;
const F = ROLLUP_FIELDS;

export class RollupStream {
  /** Samples seen out of time order, per slot: its records here are not valid. */
  readonly unordered: Uint8Array;
  /** Per slot-level (slot * 2 + level): the open record, count 0 when none is open; released by finish(). */
  private open: Float64Array;
  /** Per slot-level: records closed so far, DEAD once the level has more than it pays for. */
  private readonly emitted: Uint32Array;
  private readonly lastTs: Float64Array;
  private out: Float64Array;
  private tags: Uint32Array;
  private n = 0;
  /** After finish(): the records' indexes grouped by slot-level, and where each slot-level's run starts. */
  private perm: Uint32Array | null = null;
  private starts: Uint32Array | null = null;

  /**
   * `counts[slot]`: the slot's sample count in the log. A level is written only where it holds at least
   * `minPerRecord` samples a record, so records past count / minPerRecord end it early (and bound the memory).
   */
  constructor(private readonly counts: Uint32Array, private readonly minPerRecord: number) {
    const slots = counts.length;
    this.unordered = new Uint8Array(slots);
    this.open = new Float64Array(slots * 2 * F);
    this.emitted = new Uint32Array(slots * 2);
    this.lastTs = new Float64Array(slots).fill(-Infinity);
    // Sized for the most records close() can keep (count / minPerRecord a level), so the column never doubles
    // (a doubling holds the old and the new column at once).
    let most = 0;
    for (let s = 0; s < slots; s++) most += 2 * Math.floor(counts[s]! / minPerRecord);
    this.out = new Float64Array(Math.max(1, most) * F);
    this.tags = new Uint32Array(Math.max(1, most));
  }

  add(slot: number, t: number, v: number): void {
    if (this.unordered[slot]) return;
    if (t < this.lastTs[slot]!) {
      this.unordered[slot] = 1;
      return;
    }
    this.lastTs[slot] = t;
    const rec = this.open;
    for (let l = 0; l < 2; l++) {
      const sl = slot * 2 + l;
      if (this.emitted[sl] === DEAD) continue;
      const size = LEVELS[l]![0];
      const bucket = Math.floor(t / size) * size;
      const o = sl * F;
      if (rec[o + 1] === 0 || rec[o] !== bucket) {
        if (rec[o + 1] !== 0 && !this.close(sl)) continue;
        rec[o] = bucket;
        rec[o + 1] = 0;
        rec[o + 2] = Infinity;
        rec[o + 3] = -Infinity;
        rec[o + 4] = 0;
        rec[o + 5] = v;
        rec[o + 7] = t;
      }
      rec[o + 1]!++;
      if (v < rec[o + 2]!) rec[o + 2] = v;
      if (v > rec[o + 3]!) rec[o + 3] = v;
      rec[o + 4]! += v;
      rec[o + 6] = v;
      rec[o + 8] = t;
    }
  }

  /** Closes every open record and orders the records by slot-level; call once, after the last add. */
  finish(): void {
    for (let sl = 0; sl < this.emitted.length; sl++) if (this.open[sl * F + 1] !== 0 && this.emitted[sl] !== DEAD) this.close(sl);
    this.open = new Float64Array(0);
    const groups = this.emitted.length;
    const starts = new Uint32Array(groups + 1);
    for (let i = 0; i < this.n; i++) starts[this.tags[i]! + 1]!++;
    for (let g = 0; g < groups; g++) starts[g + 1]! += starts[g]!;
    const next = starts.slice(0, groups);
    const perm = new Uint32Array(this.n);
    for (let i = 0; i < this.n; i++) perm[next[this.tags[i]!]!++] = i;
    this.perm = perm;
    this.starts = starts;
  }

  /** How many records the slot has at level `l` (index into LEVELS); 0 when the level does not pay or the slot is unordered. */
  recordCount(slot: number, l: number): number {
    const sl = slot * 2 + l;
    if (this.unordered[slot] || this.emitted[sl] === DEAD || !this.starts) return 0;
    return this.starts[sl + 1]! - this.starts[sl]!;
  }

  /** The slot's records of level `l`, ascending, ROLLUP_FIELDS doubles each, written little-endian at `off`. */
  writeRecords(slot: number, l: number, buf: Buffer, off: number): void {
    const sl = slot * 2 + l;
    const { perm, starts, out } = this;
    if (!perm || !starts) throw new Error('rollup stream: records asked for before finish()');
    for (let k = starts[sl]!; k < starts[sl + 1]!; k++) {
      const o = perm[k]! * F;
      for (let f = 0; f < F; f++, off += 8) buf.writeDoubleLE(out[o + f]!, off);
    }
  }

  /** Moves the open record to the closed ones; false (and the level dead) when that is one record too many. */
  private close(sl: number): boolean {
    const o = sl * F;
    if ((this.emitted[sl]! + 1) * this.minPerRecord > this.counts[sl >> 1]!) {
      this.emitted[sl] = DEAD;
      this.open[o + 1] = 0;
      return false;
    }
    this.emitted[sl]!++;
    if (this.n === this.tags.length) {
      this.tags = grown(this.tags, this.n * 2);
      this.out = grown(this.out, this.n * 2 * F);
    }
    this.out.set(this.open.subarray(o, o + F), this.n * F);
    this.tags[this.n++] = sl;
    this.open[o + 1] = 0;
    return true;
  }
}
