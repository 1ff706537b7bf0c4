/**
 * The traffic map of a line the doctor listens to without sending (`shadowgate doctor --listen`): every frame
 * another master and its slaves put on the line, cut by its function code's length and checked by its CRC
 * (protocol/modbus/frame.ts), each request paired with its answer. Per unit: the function codes and address
 * ranges asked for and how often, how many got an answer, an exception or nothing, and the last values the
 * answers carried; per line: frames that broke t1.5 or t3.5 and bytes that were no frame (collisions, noise).
 * Pure: bytes and the times they were read are handed in, so it is tested on bytes.
 */
import { FrameSplitter } from '../../../protocol/modbus/frame.js';
import { ByteClock } from './traffic-timing.js';
import { trafficHints, type LineCounts } from './traffic-hints.js';
import type { TrafficRange, TrafficUnit } from '../../../protocol/modbus/doctor-types.js';

export interface TrafficOptions {
  baudRate: number;
  /** How long after a request its answer may come (the other master's response timeout), ms. */
  answerWindowMs?: number;
  /** How late a chunk may be stamped (event loop, an adapter's latency timer), ms: gaps are judged beyond it. */
  jitterMs?: number;
}


/** A request whose answer is awaited. */
interface Asked { unit: number; fc: number; from: number; count: number; at: number }

interface UnitTally {
  unit: number;
  functions: Set<number>;
  ranges: Map<string, { fc: number; from: number; to: number; requests: number }>;
  answered: number;
  exceptions: number;
  unanswered: number;
  exceptionCodes: Set<number>;
  last: Map<string, number>;
}

/** The address range a request asks for (reads and writes), or null when its function has none. */
function rangeOf(buf: Uint8Array, s: number, end: number): { from: number; count: number } | null {
  const fc = buf[s + 1]!;
  if (end - s < 8) return null;
  const from = (buf[s + 2]! << 8) | buf[s + 3]!;
  const word = (buf[s + 4]! << 8) | buf[s + 5]!;
  switch (fc) {
    case 1: case 2: case 3: case 4: case 15: case 16: case 23: return { from, count: Math.max(1, word) };
    case 5: case 6: case 22: return { from, count: 1 };
    default: return null;
  }
}

export class TrafficMap {
  readonly counts: LineCounts = { requests: 0, responses: 0, orphanResponses: 0, garbledBytes: 0, garbledRuns: 0, t15Violations: 0, t35Violations: 0 };
  private readonly clock: ByteClock;
  private readonly splitter: FrameSplitter;
  private readonly answerWindowMs: number;
  private readonly units = new Map<number, UnitTally>();
  private asked: Asked | null = null;
  /** Index of the next byte the splitter will hand on (frames and garbage come in order). */
  private consumed = 0;
  /** Where the last frame ended (-1: none yet). */
  private lastFrameEnd = -1;
  private firstAt = -1;
  private lastAt = -1;

  constructor(readonly options: TrafficOptions) {
    this.answerWindowMs = options.answerWindowMs ?? 1000;
    this.clock = new ByteClock(options.baudRate, options.jitterMs ?? 2);
    // Frames are cut by their length, so the splitter's own gap only clears a frame left half by a lost
    // byte: generous, so a frame with a pause inside still decodes (and that pause is counted here).
    const gapMs = Math.max(50, 4 * this.clock.t35);
    this.splitter = new FrameSplitter({ gapMs, answerWindowMs: this.answerWindowMs }, {
      request: (buf, s, e, at) => this.onRequest(buf, s, e, at),
      response: (buf, s, e) => this.onResponse(buf, s, e),
      discard: (n) => this.onDiscard(n),
    });
  }

  /** Bytes read from the line at `atMs` (monotonic ms). */
  push(bytes: Uint8Array, atMs: number): void {
    if (bytes.length === 0) return;
    if (this.firstAt < 0) this.firstAt = atMs;
    this.lastAt = atMs;
    this.clock.add(bytes.length, atMs);
    this.splitter.push(bytes, atMs);
  }

  /** Whether at least one frame with a good CRC was heard. */
  heardFrames(): boolean {
    return this.counts.requests + this.counts.responses > 0;
  }

  /**
   * Per unit, sorted by unit id. `windowMs`: the listening time the rates are per (default: first to last
   * byte heard); `nowMs`: a request still inside its answer window then is not counted unanswered.
   */
  report(windowMs = this.lastAt - this.firstAt, nowMs = this.lastAt): TrafficUnit[] {
    const minutes = windowMs > 0 ? windowMs / 60_000 : 0;
    return [...this.units.values()].sort((a, b) => a.unit - b.unit).map((u) => {
      const ranges: TrafficRange[] = [...u.ranges.values()]
        .sort((a, b) => a.fc - b.fc || a.from - b.from || a.to - b.to)
        .map((r) => ({ fc: r.fc, from: r.from, to: r.to, per_minute: minutes > 0 ? Math.round((r.requests / minutes) * 10) / 10 : r.requests }));
      return {
        unit: u.unit,
        functions: [...u.functions].sort((a, b) => a - b),
        ranges,
        answered: u.answered,
        exceptions: u.exceptions,
        unanswered: this.unanswered(u, nowMs),
        last_values: Object.fromEntries(u.last),
      };
    });
  }

  /** Sentences for a user about what was heard (t3.5, collisions, units that did not answer); `nowMs` as for report(). */
  hints(nowMs = this.lastAt): string[] {
    const units = [...this.units.values()].map((u) => ({ unit: u.unit, unanswered: this.unanswered(u, nowMs), answered: u.answered, exceptionCodes: [...u.exceptionCodes] }));
    return trafficHints(this.counts, units,
      { baudRate: this.options.baudRate, t35: this.clock.t35, t15: this.clock.t15 });
  }

  // ---- inside ----

  /** A unit's unanswered requests, with the last request if its answer window has passed by `nowMs`. */
  private unanswered(u: UnitTally, nowMs: number): number {
    const asked = this.asked;
    return u.unanswered + (asked && asked.unit === u.unit && u.unit !== 0 && nowMs - asked.at > this.answerWindowMs ? 1 : 0);
  }

  private tally(unit: number): UnitTally {
    let u = this.units.get(unit);
    if (!u) {
      u = { unit, functions: new Set(), ranges: new Map(), answered: 0, exceptions: 0, unanswered: 0, exceptionCodes: new Set(), last: new Map() };
      this.units.set(unit, u);
    }
    return u;
  }

  /** A whole frame `[s, e)` of the splitter's buffer was handed on: judges its timing, moves past it. */
  private frame(length: number): void {
    const start = this.consumed;
    if (start === this.lastFrameEnd) {
      const gap = this.clock.gapBefore(start);
      if (gap.known && this.clock.tooShortBetween(gap.ms)) this.counts.t35Violations++;
    }
    for (let i = start + 1; i < start + length; i++) {
      const gap = this.clock.gapBefore(i);
      if (gap.known && this.clock.tooLongInFrame(gap.ms)) {
        this.counts.t15Violations++;
        break;
      }
    }
    this.consumed += length;
    this.lastFrameEnd = this.consumed;
    this.clock.forgetBefore(this.consumed);
  }

  private onDiscard(count: number): void {
    this.counts.garbledBytes += count;
    this.counts.garbledRuns++;
    this.consumed += count;
    this.clock.forgetBefore(this.consumed);
  }

  private onRequest(buf: Uint8Array, s: number, e: number, at: number): void {
    this.frame(e - s);
    this.counts.requests++;
    this.missed();
    const unit = buf[s]!;
    const fc = buf[s + 1]!;
    const u = this.tally(unit);
    u.functions.add(fc);
    const range = rangeOf(buf, s, e);
    if (range) {
      const to = range.from + range.count - 1;
      const key = `${fc}:${range.from}:${to}`;
      const r = u.ranges.get(key);
      if (r) r.requests++;
      else u.ranges.set(key, { fc, from: range.from, to, requests: 1 });
    }
    this.asked = { unit, fc, from: range?.from ?? 0, count: range?.count ?? 0, at };
  }

  /** The request before went unanswered (another came, or its answer window passed): counted so. */
  private missed(): void {
    const asked = this.asked;
    this.asked = null;
    if (asked && asked.unit !== 0) this.tally(asked.unit).unanswered++; // a broadcast (unit 0) is never answered
  }

  private onResponse(buf: Uint8Array, s: number, e: number): void {
    this.frame(e - s);
    this.counts.responses++;
    const asked = this.asked;
    const unit = buf[s]!;
    const fc = buf[s + 1]!;
    if (!asked || asked.unit !== unit || asked.fc !== (fc & 0x7f)) {
      this.counts.orphanResponses++;
      return;
    }
    this.asked = null;
    const u = this.tally(unit);
    if (fc & 0x80) {
      u.exceptions++;
      u.exceptionCodes.add(buf[s + 2]!);
      return;
    }
    u.answered++;
    this.values(u, asked, buf, s);
  }

  /** The values an FC 1-4 answer carries, at its request's addresses; keys `"<fc>:<address>"`. */
  private values(u: UnitTally, asked: Asked, buf: Uint8Array, s: number): void {
    const bytes = buf[s + 2]!;
    if (asked.fc === 3 || asked.fc === 4) {
      if (bytes !== 2 * asked.count) return;
      for (let i = 0; i < asked.count; i++) u.last.set(`${asked.fc}:${asked.from + i}`, (buf[s + 3 + 2 * i]! << 8) | buf[s + 4 + 2 * i]!);
    } else if (asked.fc === 1 || asked.fc === 2) {
      if (bytes !== Math.ceil(asked.count / 8)) return;
      for (let i = 0; i < asked.count; i++) u.last.set(`${asked.fc}:${asked.from + i}`, (buf[s + 3 + (i >> 3)]! >> (i & 7)) & 1);
    }
  }
}
