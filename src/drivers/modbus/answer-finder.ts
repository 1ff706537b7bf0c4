/**
 * The master's answer finder: what bytes read during one transaction are, decided from the bytes themselves and
 * when each chunk came, with no port and no timers (the reader, rtu-reader.ts, feeds it and keeps the timers;
 * test/drivers/modbus-answer-finder.test.ts feeds it bytes). Our request's copy (an echoing adapter) is dropped;
 * the answer is our unit and function (or its exception), whole by its length (frame.ts), good by its CRC; what
 * came before it as a frame of its own makes it someone else's answer, unless it was exactly our own late
 * answer to a timed-out request; what ends in silence without an answer is refused.
 */
import { crcOk, endsWithFrame, expectedResponseLength, MAX_FRAME, NEED_MORE, UNKNOWN } from '../../protocol/modbus/frame.js';

const CHUNKS = 64;

export interface FinderTiming {
  /** t3.5 at the line's baud rate, ms. */
  t35: number;
  /** One character's wire time, ms. */
  charMs: number;
  /** Silence that ends an answer, ms. */
  frameGapMs: number;
}

export class AnswerFinder {
  /**
   * Told the current transaction's answer: `buf[start, end)`, a whole frame with a good CRC (valid during the
   * call); `more`: bytes came after it. `false` back: it is not the answer after all (our own late answer to a
   * timed-out request, rtu-transport.ts), and the finder keeps looking after it.
   */
  onAnswer: (buf: Uint8Array, start: number, end: number, more: boolean) => boolean | void = () => {};
  /** Told when what came cannot be the current transaction's answer. */
  onRefused: (reason: string) => void = () => {};
  /** Told once when bytes identical to our request came back right after it: the adapter echoes (`echo: "auto"` turns it on). */
  onEcho: (note: string) => void = () => {};
  /** Whether `bytes`, read at `at` before the answer, are a late answer of our own (dropped; the answer may follow). */
  ownLate: (bytes: Uint8Array, at: number) => boolean = () => false;
  /** Told right before the transaction settles (an answer or a refusal): the reader stops its timers. */
  onSettle: () => void = () => {};

  /**
   * The adapter hands back what we send (bus option `echo`): the first bytes of a transaction that equal our
   * request are ours and are dropped before the answer is looked for — also an FC 5/6 request's copy, which
   * is byte for byte the answer. Off, an exact copy of a request whose answer cannot look like it (a read) is
   * still dropped as ours, never taken for another master's frame; `auto` turns echo on when that happens.
   */
  echo: boolean;
  /** A copy of our request came back on this line (echo on or not): the adapter echoes. */
  copiesSeen = false;
  /** Our request of the current transaction (copied: the caller may write its next one meanwhile). */
  readonly sent = new Uint8Array(MAX_FRAME);
  sentLength = 0;
  /** The transaction's bytes (the reader reads into it from `rxLen`), and which chunk ended where and came when. */
  readonly rx = Buffer.alloc(512);
  rxLen = 0;
  inTransaction = false;
  /** The transaction has its answer or its refusal: bytes after it wait for `end`. */
  settled = false;
  /** Wire time until the answer begun at the first byte can be whole (0: none known: judge the silence instead). */
  restMs = 0;
  private readonly echoAuto: boolean;
  private echoPending = false;
  private echoTold = false;
  private readonly chunkEnd = new Uint16Array(CHUNKS);
  private readonly chunkAt = new Float64Array(CHUNKS);
  private chunks = 0;
  private lastAt = 0;
  private unit = -1;
  private fc = 0;
  private badCrc = false;
  /** Where the transaction's answer ended in `rx` (0: no answer). */
  private answerEnd = 0;
  /** Where what is still to be explained begins in `rx`: after a late answer of our own, dropped. */
  private from = 0;

  constructor(private readonly path: string, private readonly timing: FinderTiming, echo: boolean | 'auto' | undefined) {
    this.echo = echo === true;
    this.echoAuto = echo === 'auto';
  }

  /** The request `frame[0, length)` goes out now: the transaction begins, what was heard before it is not its answer. */
  begin(frame: Uint8Array, length: number): void {
    this.clear();
    this.inTransaction = true;
    this.settled = false;
    this.badCrc = false;
    this.unit = frame[0]!;
    this.fc = frame[1]!;
    this.sent.set(frame.subarray(0, length));
    this.sentLength = length;
    this.echoPending = true;
  }

  /**
   * `n` bytes were read into `rx` at `rxLen`, at `at`. A buffer full of a babbling line starts over (`room`
   * tells the reader where to read).
   */
  took(n: number, at: number): void {
    if (this.chunks < CHUNKS) this.chunks++;
    this.chunkEnd[this.chunks - 1] = this.rxLen + n;
    this.chunkAt[this.chunks - 1] = at;
    this.rxLen += n;
    this.lastAt = at;
    if (!this.settled) this.find();
  }

  /** Where the reader reads the transaction's next bytes: from `rxLen`, this much room (a full buffer starts over). */
  room(): number {
    if (this.rxLen === this.rx.length) this.clear(); // a babbling line: start over
    return this.rx.length - this.rxLen;
  }

  /**
   * The line has been silent since the last byte (judged at `now`): what came and is still unexplained is refused
   * once a frame gap has passed (`refused`); `early`: not yet, ask again; `none`: nothing unexplained (the
   * request's timeout judges).
   */
  quiet(now: number): 'refused' | 'early' | 'none' {
    if (!this.inTransaction || this.settled || this.rxLen <= this.from) return 'none';
    if (now - this.lastAt < this.timing.frameGapMs - 1) return 'early';
    this.refuse(`${this.rxLen - this.from} bytes, then ${this.timing.frameGapMs} ms of silence: ${this.badCrc ? 'a frame with a bad CRC' : 'an incomplete answer or not an answer to this request'}`);
    return 'refused';
  }

  /**
   * The transaction is over (answered, refused or timed out): what came after its answer in the same reads is
   * handed back, with when it came, to be heard as line traffic (another master may have begun a request t3.5
   * after it while the loop was held up).
   */
  end(): { rest: Uint8Array; at: number } | null {
    const rest = this.inTransaction && this.answerEnd > 0 && this.rxLen > this.answerEnd
      ? { rest: this.rx.subarray(this.answerEnd, this.rxLen), at: this.timeOf(this.rxLen - 1) } : null;
    this.answerEnd = 0;
    this.inTransaction = false;
    this.settled = true;
    return rest;
  }

  /** Forgets the transaction's bytes (a drain after a timeout). */
  clear(): void {
    this.rxLen = 0;
    this.from = 0;
    this.chunks = 0;
  }

  /** When the byte at `i` came. */
  private timeOf(i: number): number {
    for (let c = 0; c < this.chunks; c++) if (this.chunkEnd[c]! > i) return this.chunkAt[c]!;
    return this.lastAt;
  }

  /**
   * Looks for the answer in what came: our unit and function (or its exception), whole by its length,
   * good by its CRC. A glitch byte before it is skipped (a transceiver switching on); a header whose frame is
   * still to come waits for it — unless a good answer ends with the last byte heard.
   */
  private find(): void {
    const rx = this.rx;
    const end = this.rxLen;
    this.restMs = 0;
    if (this.echoPending && this.skipEcho() === 'part') return; // the rest of our copy is on its way
    let waiting = -1;
    for (let i = this.from; i + 1 < end; i++) {
      if (rx[i] !== this.unit || (rx[i + 1] !== this.fc && rx[i + 1] !== (this.fc | 0x80))) continue;
      const length = expectedResponseLength(rx, i, end, this.fc);
      if (length === UNKNOWN) continue;
      if (length === NEED_MORE || i + length > end) {
        if (waiting < 0) waiting = i;
        if (i === this.from && length > 0) this.restMs = (length - end) * this.timing.charMs;
        continue;
      }
      if (!crcOk(rx, i, i + length)) {
        this.badCrc = true;
        continue;
      }
      if (waiting >= 0 && i + length !== end) return; // an earlier header still waits for its bytes
      return this.answer(i, length);
    }
  }

  /**
   * Whether what came first in the transaction is the copy of our request: `part` while it may still become
   * one; `whole` once dropped (`from` is moved past it); `no` when it is not, or is taken as the answer (an
   * FC 5/6 copy with echo off: then the slave's own copy comes after, and is heard as ours, rtu-line.ts).
   */
  private skipEcho(): 'whole' | 'part' | 'no' {
    const length = this.sentLength;
    const have = Math.min(this.rxLen - this.from, length);
    for (let k = 0; k < have; k++) {
      if (this.rx[this.from + k] !== this.sent[k]) {
        this.echoPending = false;
        return 'no';
      }
    }
    if (have < length) return 'part';
    this.echoPending = false;
    // FC 5, 6 and 8 are answered with a copy of the request: without echo on, the copy is the answer.
    if (!this.echo && (this.fc === 5 || this.fc === 6 || this.fc === 8)) return 'no';
    this.from += length;
    this.copiesSeen = true;
    if (!this.echo && this.echoAuto) {
      this.echo = true;
      this.onEcho(`${this.path}: the adapter hands back what the gateway sends (a converter without echo suppression): echo is on, our own bytes are dropped`);
    } else if (!this.echo && !this.echoTold) {
      this.echoTold = true;
      this.onEcho(`${this.path}: the adapter hands back what the gateway sends: its copies of reads are dropped, but set "echo": true on this bus, or a write's copy is taken for the slave's answer`);
    }
    return 'whole';
  }

  private answer(i: number, length: number): void {
    if (i > this.from) {
      // Bytes before it that were a frame of their own — silence between, or a whole frame by its length and
      // CRC (read in one piece with the answer when the loop was held up): another master's request went out
      // with ours, and this is likely its answer — same unit, function and length, so it passes every other check.
      // Unless they are exactly the late answer to our own request that timed out (a slow slave answers in order).
      const before = this.rx.subarray(this.from, i);
      const silence = this.timeOf(i) - this.timeOf(i - 1);
      if ((silence >= this.timing.t35 || endsWithFrame(before)) && !this.ownLate(before, this.timeOf(i - 1))) {
        return this.refuse(`an answer that came after another frame (${i - this.from} bytes, then ${silence.toFixed(0)} ms of silence): it may be the answer to someone else's request`);
      }
    }
    this.settled = true;
    this.answerEnd = i + length;
    this.onSettle();
    if (this.onAnswer(this.rx, i, i + length, this.rxLen > i + length) !== false) return;
    // Our own late answer, dropped: the answer may still come after it.
    this.settled = false;
    this.answerEnd = 0;
    this.from = i + length;
    this.find();
  }

  private refuse(reason: string): void {
    this.settled = true;
    this.onSettle();
    this.onRefused(reason);
  }
}
