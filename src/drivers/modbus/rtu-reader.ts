/**
 * The RTU line's reading half, a composition: the port as a byte source with timestamps (serial-bytes.ts), the
 * transaction's answer finder (answer-finder.ts: what the bytes are), and the timers between them; the listening
 * before talking is rtu-line.ts, which builds on this.
 *
 * Every chunk is stamped when it is read: the line is free t3.5 after the last byte heard. During a
 * transaction the answer's length is known from its function code (frame.ts), so it is handed on once, whole,
 * and on a line that trickles bytes in the line sleeps until the rest of the frame can have come (one wake-up
 * per frame, not per chunk). What cannot be the answer is refused: bytes that end in silence without one, or
 * an answer that came after another frame (someone else's).
 */
import { EventEmitter } from 'node:events';
import { answerGapMs, charMs, silenceMs } from '../../protocol/modbus/wire-cost.js';
import { AnswerFinder } from './answer-finder.js';
import { SerialBytes, type LineBinding, type LineDirection } from './serial-bytes.js';
import type { RtuOptions } from './transport.js';

export { UV_READABLE, type BoundPort, type LineBinding, type LineDirection } from './serial-bytes.js';

export abstract class RtuReader extends EventEmitter {
  /** What the bytes of the current transaction are (its callbacks: onAnswer, onRefused, onEcho). */
  readonly finder: AnswerFinder;
  protected readonly bytes: SerialBytes;
  protected readonly t35: number;
  protected readonly charMs: number;
  /** Silence that ends an answer (wire-cost.ts answerGapMs). */
  protected readonly frameGapMs: number;
  /** Bytes read outside a transaction (heard). */
  private readonly scratch = Buffer.alloc(512);
  private quietTimer: NodeJS.Timeout | undefined;
  private restTimer: NodeJS.Timeout | undefined;

  constructor(options: RtuOptions, binding?: LineBinding) {
    super();
    this.t35 = silenceMs(options.baudRate);
    this.charMs = charMs(options.baudRate);
    this.frameGapMs = answerGapMs(options.baudRate);
    this.finder = new AnswerFinder(options.path, { t35: this.t35, charMs: this.charMs, frameGapMs: this.frameGapMs }, options.echo);
    this.finder.ownLate = (bytes, at) => this.ownLate(bytes, at);
    this.finder.onSettle = () => this.stopTimers();
    this.bytes = new SerialBytes(options, this.onReadable, binding);
    this.bytes.on('error', (err: Error) => this.emit('error', err));
    this.bytes.on('close', () => {
      this.stopTimers();
      this.emit('close');
    });
  }

  /** Bytes heard outside our own transactions, read at `at`. */
  protected abstract heard(bytes: Uint8Array, at: number): void;

  /** Whether `bytes`, read at `at` in a transaction before its answer, are a late answer of our own, dropped. */
  protected abstract ownLate(bytes: Uint8Array, at: number): boolean;

  get isOpen(): boolean {
    return this.bytes.isOpen;
  }

  /** Drives DE/RE around each frame (rs485 "gpio"); null when the UART or the adapter does it. */
  set direction(direction: LineDirection | null) {
    this.bytes.direction = direction;
  }

  /** Opens the port (a fresh line per open: the transport builds one each time). */
  open(): Promise<void> {
    return this.bytes.open();
  }

  async close(): Promise<void> {
    this.stopTimers();
    await this.bytes.close();
  }

  /** The request `frame[0, length)` goes out now: the transaction begins, what was heard before it is not its answer. */
  protected begin(frame: Uint8Array, length: number): void {
    this.finder.begin(frame, length);
    this.bytes.write(frame, 0, length);
  }

  /** Whether the port is open with a file descriptor to write to. */
  protected hasFd(): boolean {
    return this.bytes.hasFd();
  }

  /** When the last byte was heard (performance.now(); 0: never). */
  lastByteAt(): number {
    return this.bytes.lastByte;
  }

  /**
   * Reads what has come and not been read (the loop was held up); returns how many bytes. `polledSince`: a
   * moment before the loop last polled for I/O (the caller waited for a timer, then for an immediate): if the
   * poller was armed from before it and has not said readable, nothing was waiting when the loop polled, and
   * if that was a fraction of a character ago (as for `send`) no read is made — a read that finds nothing
   * costs an exception in Node, about as much CPU as the request's own write.
   */
  takePending(polledSince = -Infinity): number {
    if (this.bytes.polling && this.bytes.armedAt <= polledSince && this.fresh(polledSince)) {
      this.bytes.drainedAt = Math.max(this.bytes.drainedAt, polledSince);
      return 0;
    }
    return this.readNow();
  }

  /** Reads, now, what has come and not been read; returns how many bytes. */
  readNow(): number {
    let total = 0;
    for (;;) {
      const finder = this.finder;
      const inTransaction = finder.inTransaction;
      const room = inTransaction ? finder.room() : this.scratch.length;
      const n = this.bytes.read(inTransaction ? finder.rx : this.scratch, inTransaction ? finder.rxLen : 0, room);
      if (n === 0) return total;
      total += n;
      const at = this.bytes.lastByte;
      if (inTransaction) {
        finder.took(n, at);
        // Sleeping to the frame's end, the line reads then and judges the silence after that read.
        if (!finder.settled && finder.restMs < 2) this.armQuiet();
      } else {
        this.heard(this.scratch.subarray(0, n), at);
      }
      if (n < room) return total; // the kernel's buffer is empty: the poller says when more comes
    }
  }

  /**
   * The transaction is over (answered, refused or timed out): what comes next is heard as line traffic,
   * and so is what came after its answer in the same reads.
   */
  end(): void {
    const after = this.finder.end();
    if (after) this.heard(after.rest, after.at);
    this.stopTimers();
    this.arm();
  }

  /** Forgets the transaction's bytes (a drain after a timeout). */
  clear(): void {
    this.finder.clear();
  }

  /**
   * Whether the kernel known empty at `at` is as good as a read now: a byte that lands within an eighth of a
   * character was begun by a master that started together with this one, which no read can hear in time.
   */
  protected fresh(at: number): boolean {
    return this.bytes.freshSince(at, this.charMs / 8);
  }

  protected stopTimers(): void {
    clearTimeout(this.restTimer);
    this.restTimer = undefined;
    clearTimeout(this.quietTimer);
    this.quietTimer = undefined;
  }

  private readonly onReadable = (): void => {
    this.readNow();
    this.arm();
  };

  private readonly onRest = (): void => {
    this.restTimer = undefined;
    this.readNow();
    if (this.finder.inTransaction && !this.finder.settled) this.armQuiet();
    this.arm();
  };

  /** Waits for the next bytes: the poller, or (an answer under way) a timer to when it can be whole. */
  private arm(): void {
    if (!this.bytes.isOpen || this.restTimer) return;
    const finder = this.finder;
    if (finder.inTransaction && !finder.settled && finder.restMs >= 2) {
      this.restTimer = setTimeout(this.onRest, Math.ceil(finder.restMs));
      return;
    }
    this.bytes.poll();
  }

  /** The frame gap from the last byte heard: then what came is judged (onQuiet). */
  private armQuiet(): void {
    const wait = Math.max(1, Math.ceil(this.frameGapMs - (performance.now() - this.bytes.lastByte)));
    if (this.quietTimer && wait >= this.frameGapMs) this.quietTimer.refresh();
    else {
      clearTimeout(this.quietTimer);
      this.quietTimer = setTimeout(this.onQuiet, wait);
    }
  }

  private readonly onQuiet = (): void => {
    const finder = this.finder;
    if (!finder.inTransaction || finder.settled) return;
    this.readNow(); // a held-up loop (or a line sleeping to the frame's end) may not have read it yet
    if (!finder.settled && finder.quiet(performance.now()) === 'early') this.armQuiet();
  };
}
