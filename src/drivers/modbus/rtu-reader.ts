/**
 * The RTU line's reading half: owns the serial port's file descriptor, reads and stamps every byte, writes
 * the master's request frames, and hands the current transaction its answer whole; the listening before
 * talking is rtu-line.ts, which builds on this.
 *
 * Reads and writes are non-blocking read(2)/write(2) calls on the event loop, reads when serialport's
 * poller says the tty is readable — not fs.read/fs.write through libuv's thread pool, which cost three
 * thread-pool round trips per request and let a byte sit unheard in a read in flight while the bus owner
 * listened before talking. Every chunk is stamped when it is read: the line is free t3.5 after the last
 * byte heard. During a transaction the answer's length is known from its function code (frame.ts), so
 * it is handed on once, whole, and on a line that trickles bytes in the line sleeps until the rest of the
 * frame can have come (one wake-up per frame, not per chunk). What cannot be the answer is refused:
 * bytes that end in silence without one, or an answer that came after another frame (someone else's).
 */
import { EventEmitter } from 'node:events';
import { readSync, writeSync } from 'node:fs';
import { SerialPort } from 'serialport';
import { crcOk, expectedResponseLength, MAX_FRAME, NEED_MORE, UNKNOWN } from '../../protocol/modbus/frame.js';
import { charMs, silenceMs } from '../../protocol/modbus/wire-cost.js';
import { endsWithFrame } from './line-listener.js';
import type { RtuOptions } from './transport.js';

/**
 * What the line uses of the port serialport's Linux (and macOS) binding opens: its fd and its poller, both
 * declared public by @serialport/bindings-cpp (canary: test/deploy/library-internals.test.ts).
 */
export interface BoundPort {
  fd: number | null;
  readonly isOpen: boolean;
  readonly poller: { on(event: 'readable', fn: (err: Error | null) => void): unknown; poll(flags: number): void };
  close(): Promise<void>;
  /** Resolves once the UART's buffer has gone out (tcdrain(3) in the thread pool); absent on a test's port. */
  drain?(): Promise<void>;
}
/**
 * What drives the transceiver's direction around each frame (bus option `rs485`, mode "gpio": rs485-de.ts): told
 * right before the first byte is written, and once the frame is handed to the kernel.
 */
export interface LineDirection {
  transmit(): void;
  /** `bytes` written from `startedAt` (performance.now()); `drained` settles once the UART has sent them. */
  sent(bytes: number, startedAt: number, drained: Promise<unknown>): void;
}
/** What opens a port: serialport's detected binding, or (tests) one that wraps it. */
export interface LineBinding { open(options: object): Promise<BoundPort> }

/** The poller's flag for "readable" (bindings-cpp's EVENTS.UV_READABLE). Its "writable" is never asked for. */
export const UV_READABLE = 1;
const CHUNKS = 64;

const isAgain = (err: unknown): boolean => {
  const code = (err as { code?: string }).code;
  return code === 'EAGAIN' || code === 'EWOULDBLOCK' || code === 'EINTR';
};

export abstract class RtuReader extends EventEmitter {
  /**
   * Told the current transaction's answer: `buf[start, end)`, a whole frame with a good CRC (valid during the
   * call); `more`: bytes came after it. `false` back: it is not the answer after all (our own late answer to a
   * timed-out request, rtu-transport.ts), and the line keeps looking after it.
   */
  onAnswer: (buf: Uint8Array, start: number, end: number, more: boolean) => boolean | void = () => {};
  /** Told when what came cannot be the current transaction's answer. */
  onRefused: (reason: string) => void = () => {};
  /** Told once when bytes identical to our request came back right after it: the adapter echoes (`echo: "auto"` turns it on). */
  onEcho: (note: string) => void = () => {};
  /**
   * The adapter hands back what we send (bus option `echo`): the first bytes of a transaction that equal our
   * request are ours and are dropped before the answer is looked for — also an FC 5/6 request's copy, which
   * is byte for byte the answer. Off, an exact copy of a request whose answer cannot look like it (a read) is
   * still dropped as ours, never taken for another master's frame; `auto` turns echo on when that happens.
   */
  echo: boolean;
  /** Drives DE/RE around each frame (rs485 "gpio"); null when the UART or the adapter does it. */
  direction: LineDirection | null = null;
  private readonly echoAuto: boolean;
  /** Our request of the current transaction (copied: the caller may write its next one meanwhile). */
  protected readonly sent = new Uint8Array(MAX_FRAME);
  protected sentLength = 0;
  /** Its copy may still be at `from`: not looked past yet. */
  private echoPending = false;
  private echoTold = false;
  /** A copy of our request came back on this line (echo on or not): the adapter echoes. */
  protected copiesSeen = false;

  private port: BoundPort | null = null;
  private closing = false;
  private polling = false;
  protected lastByte = 0;
  /** When the kernel last had nothing waiting, as a read or the poller found (performance.now()). */
  protected drainedAt = -Infinity;
  /** When the poller was last asked to say readable (it is asked again after each time it says so). */
  private armedAt = -Infinity;
  protected readonly t35: number;
  protected readonly charMs: number;
  /**
   * Silence that ends an answer: t3.5 in the standard, but USB adapters hand bytes over in bursts (an FTDI
   * waits up to 16 ms), so never under 50 ms — still a sixth of the default timeout.
   */
  protected readonly frameGapMs: number;
  /** Bytes read outside a transaction (heard). */
  private readonly scratch = Buffer.alloc(512);
  /** The current transaction's bytes, and which chunk ended where and came when. */
  private readonly rx = Buffer.alloc(512);
  private rxLen = 0;
  private readonly chunkEnd = new Uint16Array(CHUNKS);
  private readonly chunkAt = new Float64Array(CHUNKS);
  private chunks = 0;
  private inTransaction = false;
  private settled = false;
  private unit = -1;
  private fc = 0;
  private badCrc = false;
  /** Wire time until the answer begun at the first byte can be whole (0: poll for readable instead). */
  private restMs = 0;
  private quietTimer: NodeJS.Timeout | undefined;
  private restTimer: NodeJS.Timeout | undefined;
  /** Where the transaction's answer ended in `rx` (0: no answer). */
  private answerEnd = 0;
  /** Where what is still to be explained begins in `rx`: after a late answer of our own, dropped. */
  private from = 0;

  constructor(private readonly options: RtuOptions, private readonly binding = SerialPort.binding as unknown as LineBinding) {
    super();
    this.t35 = silenceMs(options.baudRate);
    this.charMs = charMs(options.baudRate);
    this.frameGapMs = Math.max(50, Math.ceil(4 * this.t35));
    this.echo = options.echo === true;
    this.echoAuto = options.echo === 'auto';
  }

  /** Bytes heard outside our own transactions, read at `at`. */
  protected abstract heard(bytes: Buffer, at: number): void;

  /** Whether `bytes`, read at `at` in a transaction before its answer, are a late answer of our own, dropped. */
  protected abstract ownLate(bytes: Uint8Array, at: number): boolean;

  get isOpen(): boolean {
    return this.port !== null && this.port.isOpen && !this.closing;
  }

  /** Opens the port (a fresh line per open: the transport builds one each time). */
  async open(): Promise<void> {
    const { path, baudRate, dataBits, stopBits, parity } = this.options;
    const port = await this.binding.open({ path, baudRate, dataBits, stopBits, parity });
    if (typeof port.fd !== 'number' || typeof port.poller?.poll !== 'function') {
      await port.close().catch(() => {});
      throw new Error(`${path}: this platform's serial binding has no fd poller (non-blocking reads need one)`);
    }
    this.port = port;
    port.poller.on('readable', this.onReadable);
    this.arm();
  }

  async close(): Promise<void> {
    const port = this.port;
    if (!port || this.closing) return;
    this.closing = true;
    this.stopTimers();
    try {
      if (port.isOpen) await port.close();
    } finally {
      this.port = null;
      this.emit('close');
    }
  }

  /** The request `frame[0, length)` goes out now: the transaction begins, what was heard before it is not its answer. */
  protected begin(frame: Uint8Array, length: number): void {
    this.clear();
    this.inTransaction = true;
    this.settled = false;
    this.badCrc = false;
    this.unit = frame[0]!;
    this.fc = frame[1]!;
    this.sent.set(frame.subarray(0, length));
    this.sentLength = length;
    this.echoPending = true;
    this.put(frame, 0, length);
  }

  /** Whether the port is open with a file descriptor to write to. */
  protected hasFd(): boolean {
    return typeof this.port?.fd === 'number';
  }

  /** When the last byte was heard (performance.now(); 0: never). */
  lastByteAt(): number {
    return this.lastByte;
  }

  /**
   * Reads what has come and not been read (the loop was held up); returns how many bytes. `polledSince`: a
   * moment before the loop last polled for I/O (the caller waited for a timer, then for an immediate): if the
   * poller was armed from before it and has not said readable, nothing was waiting when the loop polled, and
   * if that was a fraction of a character ago (as for `send`) no read is made — a read that finds nothing
   * costs an exception in Node, about as much CPU as the request's own write.
   */
  takePending(polledSince = -Infinity): number {
    if (this.polling && this.armedAt <= polledSince && this.fresh(polledSince)) {
      this.drainedAt = Math.max(this.drainedAt, polledSince);
      return 0;
    }
    return this.readNow();
  }

  /** Reads, now, what has come and not been read; returns how many bytes. */
  readNow(): number {
    const fd = this.port?.fd;
    if (typeof fd !== 'number') return 0;
    let total = 0;
    for (;;) {
      const into = this.inTransaction ? this.rx : this.scratch;
      if (this.inTransaction && this.rxLen === this.rx.length) this.clear(); // a babbling line: start over
      const from = this.inTransaction ? this.rxLen : 0;
      const room = into.length - from;
      let n: number;
      try {
        n = readSync(fd, into, from, room, null);
      } catch (err) {
        if (isAgain(err)) this.drainedAt = performance.now();
        else this.fail(err as Error);
        return total;
      }
      if (n <= 0) {
        this.drainedAt = performance.now(); // 0 from a tty: nothing to read now
        return total;
      }
      total += n;
      const at = performance.now();
      this.lastByte = at;
      if (this.inTransaction) this.took(n, at);
      else this.heard(this.scratch.subarray(0, n), at);
      if (n < room) {
        this.drainedAt = at; // the kernel's buffer is empty: the poller says when more comes
        return total;
      }
    }
  }

  /**
   * The transaction is over (answered, refused or timed out): what comes next is heard as line traffic,
   * and so is what came after its answer in the same reads (another master may have begun a request
   * t3.5 after it while the loop was held up).
   */
  end(): void {
    if (this.inTransaction && this.answerEnd > 0 && this.rxLen > this.answerEnd) {
      this.heard(this.rx.subarray(this.answerEnd, this.rxLen), this.timeOf(this.rxLen - 1));
    }
    this.answerEnd = 0;
    this.inTransaction = false;
    this.settled = true;
    this.stopTimers();
    this.arm();
  }

  /** Forgets the transaction's bytes (a drain after a timeout). */
  clear(): void {
    this.rxLen = 0;
    this.from = 0;
    this.chunks = 0;
  }

  // ---- inside ----

  /** A read or poll failed (EIO: the adapter was unplugged, the pty's other end went away): the line is lost. */
  private fail(err: Error): void {
    if (this.closing) return;
    this.emit('error', err);
    void this.close().catch(() => {});
  }

  private readonly onReadable = (err: Error | null): void => {
    this.polling = false;
    if (this.closing || !this.port) return;
    if (err) {
      // libuv reports POLLERR (the other end gone) as EBADF. Not from inside the native callback: a
      // listener that throws there aborts the process.
      if (!(err as { canceled?: boolean }).canceled) process.nextTick(() => this.fail(err));
      return;
    }
    this.readNow();
    this.arm();
  };

  private readonly onRest = (): void => {
    this.restTimer = undefined;
    this.readNow();
    if (this.inTransaction && !this.settled) this.armQuiet();
    this.arm();
  };

  /** Waits for the next bytes: the poller, or (an answer under way) a timer to when it can be whole. */
  private arm(): void {
    if (!this.port || this.closing || this.restTimer) return;
    if (this.inTransaction && !this.settled && this.restMs >= 2) {
      this.restTimer = setTimeout(this.onRest, Math.ceil(this.restMs));
      return;
    }
    if (this.polling) return;
    this.polling = true;
    this.armedAt = performance.now();
    this.port.poller.poll(UV_READABLE);
  }

  protected stopTimers(): void {
    clearTimeout(this.restTimer);
    this.restTimer = undefined;
    clearTimeout(this.quietTimer);
    this.quietTimer = undefined;
  }

  /**
   * Writes `data[offset, end)`; a full tty buffer (never for one frame in practice) is retried a millisecond later.
   * `startedAt`: when the frame's first write began (a retry's), for `direction`.
   */
  private put(data: Uint8Array, offset: number, end: number, startedAt = -1): void {
    const port = this.port;
    const fd = port?.fd;
    if (typeof fd !== 'number') return;
    if (startedAt < 0) {
      this.direction?.transmit();
      startedAt = performance.now();
    }
    try {
      while (offset < end) offset += writeSync(fd, data, offset, end - offset);
    } catch (err) {
      if (!isAgain(err)) return this.fail(err as Error);
      setTimeout(() => this.put(data, offset, end, startedAt), 1);
      return;
    }
    this.direction?.sent(end, startedAt, port?.drain?.() ?? Promise.resolve());
  }

  /** `n` bytes read into the transaction's buffer at `at`. */
  private took(n: number, at: number): void {
    if (this.chunks < CHUNKS) this.chunks++;
    this.chunkEnd[this.chunks - 1] = this.rxLen + n;
    this.chunkAt[this.chunks - 1] = at;
    this.rxLen += n;
    if (this.settled) return;
    this.find();
    // Sleeping to the frame's end, the line reads then and judges the silence after that read.
    if (!this.settled && this.restMs < 2) this.armQuiet();
  }

  /** The frame gap from the last byte heard: then what came is judged (onQuiet). */
  private armQuiet(): void {
    const wait = Math.max(1, Math.ceil(this.frameGapMs - (performance.now() - this.lastByte)));
    if (this.quietTimer && wait >= this.frameGapMs) this.quietTimer.refresh();
    else {
      clearTimeout(this.quietTimer);
      this.quietTimer = setTimeout(this.onQuiet, wait);
    }
  }

  /**
   * Whether the kernel known empty at `at` is as good as a read now: a byte that lands within an eighth of a
   * character was begun by a master that started together with this one, which no read can hear in time.
   */
  protected fresh(at: number): boolean {
    return performance.now() - at <= this.charMs / 8;
  }

  /** When the byte at `i` came. */
  private timeOf(i: number): number {
    for (let c = 0; c < this.chunks; c++) if (this.chunkEnd[c]! > i) return this.chunkAt[c]!;
    return this.lastByte;
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
        if (i === this.from && length > 0) this.restMs = (length - end) * this.charMs;
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
      this.onEcho(`${this.options.path}: the adapter hands back what the gateway sends (a converter without echo suppression): echo is on, our own bytes are dropped`);
    } else if (!this.echo && !this.echoTold) {
      this.echoTold = true;
      this.onEcho(`${this.options.path}: the adapter hands back what the gateway sends: its copies of reads are dropped, but set "echo": true on this bus, or a write's copy is taken for the slave's answer`);
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
      if ((silence >= this.t35 || endsWithFrame(before)) && !this.ownLate(before, this.timeOf(i - 1))) {
        return this.refuse(`an answer that came after another frame (${i - this.from} bytes, then ${silence.toFixed(0)} ms of silence): it may be the answer to someone else's request`);
      }
    }
    this.settled = true;
    this.answerEnd = i + length;
    this.stopTimers();
    if (this.onAnswer(this.rx, i, i + length, this.rxLen > i + length) !== false) return;
    // Our own late answer, dropped: the answer may still come after it (took() arms the quiet timer again).
    this.settled = false;
    this.answerEnd = 0;
    this.from = i + length;
    this.find();
  }

  private refuse(reason: string): void {
    this.settled = true;
    this.stopTimers();
    this.onRefused(reason);
  }

  private readonly onQuiet = (): void => {
    if (!this.inTransaction || this.settled) return;
    this.readNow(); // a held-up loop (or a line sleeping to the frame's end) may not have read it yet
    if (this.settled || this.rxLen <= this.from) return; // nothing unexplained: the timeout judges
    if (performance.now() - this.lastByte < this.frameGapMs - 1) return this.armQuiet();
    this.refuse(`${this.rxLen - this.from} bytes, then ${this.frameGapMs} ms of silence: ${this.badCrc ? 'a frame with a bad CRC' : 'an incomplete answer or not an answer to this request'}`);
  };
}
