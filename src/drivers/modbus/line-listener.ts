/**
 * What a master hears on an RTU line between its own transactions: another master's traffic (a second
 * gateway, a service laptop). t3.5 of silence is not enough to go ahead after another master's request:
 * its slave is still to answer (a meter may take tens of ms), and a request sent meanwhile gets that answer
 * — same unit, function and length, so it would pass every check — for its own. So a request heard on the
 * line holds the line until its answer begins or the response timeout has passed.
 */
import { crcOk, endsWithFrame, expectedResponseLength, NEED_MORE, requestEndingAt, UNKNOWN } from '../../protocol/modbus/frame.js';

export class LineListener {
  private frame = Buffer.alloc(0);
  private lastAt = -Infinity;
  private answering = false;
  private pendingUntil = 0;
  /** The unit and function code of the request whose answer is pending. */
  private pendingUnit = 0;
  private pendingFc = 0;
  private midFrameUntil = 0;
  /** Our own request that timed out: until `until`, its answer may still come, and is then no other master's. */
  private late = { unit: 0, fc: 0, until: 0 };
  /** The frame being heard may still become that late answer (not taken for another master's yet). */
  private latePart = false;
  /** When bytes of another master (or noise) were last heard: not our own late answers. */
  private foreignAt = -Infinity;
  /** Late answers to our own timed-out requests, recognised by unit, function, length and CRC, and dropped. */
  lateAnswers = 0;

  /**
   * `gapMs`: silence that ends a frame (t3.5). `holdMs`: how long bytes that do not end a whole frame hold
   * the line (0: not at all) — an adapter or a relay that hands a frame over in bursts can leave more
   * than t3.5 between two of its bytes, and a request sent into that gap collides with the rest.
   */
  constructor(private readonly gapMs: number, private readonly holdMs = 0) {}

  /** Bytes heard outside our own transactions; `answerWaitMs`: how long a slave may take to answer. */
  heard(chunk: Uint8Array, now: number, answerWaitMs: number): void {
    if (this.pendingUntil >= now && this.answers(chunk)) {
      // The first bytes after a request, from its unit, are its answer (an FC5/6 answer even looks like a
      // request). Bytes from another unit are not: the other master asked again (its own timeout passed, a
      // slow slave), or a late answer to an older request came — the pending answer may still come.
      this.pendingUntil = 0;
      this.answering = true;
      this.frame = Buffer.from(chunk);
    } else if (now - this.lastAt > this.gapMs && this.midFrameUntil < now) {
      // Silence after a whole frame (or after a hold that ran out) begins a new one; bytes that did not end a
      // frame yet are kept: a relay or an adapter that hands a frame over in bursts leaves more than t3.5
      // inside it, and a request split so would otherwise never be recognised (nor its answer waited for).
      if (this.latePart) this.foreignAt = this.lastAt; // it never became our late answer
      this.answering = false;
      this.frame = Buffer.from(chunk);
    } else {
      this.frame = Buffer.concat([this.frame, chunk]).subarray(-256);
    }
    this.lastAt = now;
    // A late answer to our own request is told from the frame itself (unit, function, length, CRC), never from
    // how fast it came: counted and dropped, it neither marks the line shared nor holds it as a request would
    // (an FC 5/6 answer looks like one).
    const late = this.answering ? 'no' : this.lateAnswer(now);
    this.latePart = late === 'part';
    if (late === 'whole') {
      this.lateAnswers++;
      this.late.until = 0;
      this.midFrameUntil = 0;
      return;
    }
    if (late === 'no') this.foreignAt = now;
    const request = this.answering || late === 'part' ? -1 : requestEndingAt(this.frame);
    if (request >= 0) {
      this.pendingUntil = now + answerWaitMs;
      this.pendingUnit = this.frame[request]!;
      this.pendingFc = this.frame[request + 1]!;
    }
    this.midFrameUntil = this.holdMs > 0 && !endsWithFrame(this.frame) ? now + this.holdMs : 0;
  }

  /** Our request `unit`/`fc` timed out: an answer to it heard until `until` is ours, late (not another master's). */
  expectLate(unit: number, fc: number, until: number): void {
    this.late = { unit, fc, until };
  }

  /**
   * Whether `bytes`, read in our own transaction before its answer, are exactly the late answer to our
   * timed-out request: then they are counted and dropped, and the answer after them is ours (a slave answers
   * in order). Anything else before an answer may be another master's request, whose answer it would be.
   */
  takeLate(bytes: Uint8Array, at: number): boolean {
    if (this.lateAnswer(at, bytes) !== 'whole') return false;
    this.dropLate();
    return true;
  }

  /** Whether an answer of `unit`/`fc` may still be our own late answer (its window open, not heard yet). */
  awaitsLate(unit: number, fc: number, now: number): boolean {
    return now <= this.late.until && this.late.unit === unit && this.late.fc === fc;
  }

  /** The answer read in our transaction was that late answer (rtu-transport.ts): counted and dropped. */
  dropLate(): void {
    this.lateAnswers++;
    this.late.until = 0;
  }

  /** Whether the frame heard so far is the late answer to our timed-out request: whole, a part of it, or not. */
  private lateAnswer(now: number, f: Uint8Array = this.frame): 'whole' | 'part' | 'no' {
    const { unit, fc, until } = this.late;
    if (now > until || f[0] !== unit || (f.length >= 2 && (f[1]! & 0x7f) !== fc)) return 'no';
    const length = expectedResponseLength(f, 0, f.length, fc);
    if (length === NEED_MORE || (length !== UNKNOWN && f.length < length)) return 'part';
    return length === f.length && crcOk(f, 0, length) ? 'whole' : 'no';
  }

  /** Whether `chunk` can begin the answer to the pending request: its unit, its function code or its exception. */
  private answers(chunk: Uint8Array): boolean {
    return chunk[0] === this.pendingUnit && (chunk.length < 2 || (chunk[1]! & 0x7f) === this.pendingFc);
  }

  /** Our own transaction takes the line: what came before it is no longer pending. */
  reset(): void {
    this.frame = Buffer.alloc(0);
    this.latePart = false;
    this.answering = false;
    this.pendingUntil = 0;
    this.midFrameUntil = 0;
  }

  /** When bytes of another master (or noise) were last heard outside our own transactions (-Infinity: never). */
  lastHeardAt(): number {
    return this.foreignAt;
  }

  /** Until when another master's request may still be answered (0: none pending). */
  answerPendingUntil(): number {
    return this.pendingUntil;
  }

  /** Until when bytes heard that do not end a whole frame hold the line (0: they end one, or no hold). */
  busyUntil(): number {
    return this.midFrameUntil;
  }
}
