/**
 * The RTU link: the gateway's Modbus RTU master on a line of its own (rtu-line.ts). A request goes out as
 * unit + PDU (protocol/modbus/client-pdu.ts) + CRC from one frame buffer; the line hands back the answer
 * whole, already cut by its function code's length and checked for its unit and CRC (protocol/modbus/
 * frame.ts), and client-pdu checks it against the request (byte count, a write's echo) — no per-request
 * closures or copies of a client library between the bus owner and the tty. What a master on a shared
 * line needs beyond that: every byte heard is stamped and what another master says is listened to (the
 * bus owner listens before it talks), what came before a request is never taken for its answer, and an
 * answer that cannot be trusted fails at once as a corrupt frame instead of holding the line until the timeout.
 */
import { GatewayError } from '../../core/errors.js';
import { decodeAnswer, encodeRequestInto } from '../../protocol/modbus/client-pdu.js';
import { MAX_FRAME, sealRtu } from '../../protocol/modbus/frame.js';
import { RtuLine } from './rtu-line.js';
import { serialPathPresent } from './serial-bytes.js';
import { Rs485Control, type Rs485Deps } from './rs485-control.js';
import { WireException, WireGarbled, WireTimeout, type ModbusTransport, type RawAnswer, type RtuOptions, type WireRequest } from './transport.js';

type Answer = number[] | boolean[] | undefined;

/** The bytes a refusal of the line names (`12 bytes, then 50 ms of silence: …`), else 1: something came. */
const bytesIn = (reason: string): number => Number(/(\d+) bytes/.exec(reason)?.[1] ?? 1);

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * How many timeouts after one an answer to it is still taken as late (ours) rather than another master's: a
 * slow meter answers a little past the timeout, not seconds later.
 */
const LATE_ANSWER_WINDOW = 4;

export class RtuTransport implements ModbusTransport {
  readonly kind = 'rtu' as const;
  readonly label: string;

  /**
   * How long an open may take. A wedged USB adapter can leave open() pending forever, which would hold
   * the bus (and its reopen loop) with it: past this the open fails and the bus's reopen backoff goes on.
   */
  protected openTimeoutMs = 5000;

  /** The line opened last (a fresh one per open). */
  private line: RtuLine | null = null;
  private lost = false;
  private lostHandler: (reason: string) => void = () => {};
  private readonly charMs: number;
  /** Recent round trips of accepted answers, per unit and request shape (ms). */
  private readonly rtts = new Map<number, number[]>();
  /** The request frame, written in place for every request (the line sends it from here). */
  private readonly frame = new Uint8Array(MAX_FRAME);
  /** The outstanding request (the bus owner sends one at a time): what it asked, how it ends. */
  private outstanding = false;
  private unit = 0;
  private req: WireRequest | null = null;
  /** The outstanding request is a raw exchange (`exchange`): its answer is handed back as a PDU, not decoded. */
  private raw = false;
  private rawAnswer: RawAnswer | null = null;
  private sentAt = 0;
  private timeoutMs = 0;
  private resolve: (data: Answer) => void = () => {};
  private reject: (err: Error) => void = () => {};
  private timer: NodeJS.Timeout | undefined;
  /** Late answers recognised by lines closed since (each open builds a fresh line). */
  private lateBefore = 0;
  /** The adapter was seen handing back our own bytes (told once). */
  private echoSeen = false;
  private echoHandler: (note: string) => void = () => {};
  /** The bus option `rs485`: kernel mode set before each open, or the DE pin driven around each frame. */
  readonly rs485: Rs485Control | null;

  constructor(private readonly options: RtuOptions, rs485Deps?: Rs485Deps) {
    this.label = options.path;
    this.charMs = 11_000 / options.baudRate;
    this.rs485 = options.rs485 ? new Rs485Control(options.path, options.rs485, this.charMs, rs485Deps) : null;
  }

  /** Opens `line`'s port (a test stands in a wedged adapter here). */
  protected connect(line: RtuLine): Promise<void> {
    return line.open();
  }

  async open(): Promise<void> {
    await this.close();
    // Before the port opens: the kernel keeps a tty's RS-485 mode across opens, and DE must be low before any byte.
    await this.rs485?.beforeOpen();
    // Echo seen on a line before (`auto`) stays on for the next one: it is the adapter's, not the open's.
    const line = new RtuLine(this.options.echo === 'auto' && this.echoSeen ? { ...this.options, echo: true } : this.options);
    line.finder.onEcho = this.onEchoSeen;
    line.on('error', (err: Error) => this.markLost(line, `error: ${err.message}`));
    line.on('close', () => this.markLost(line, 'closed'));
    line.finder.onAnswer = this.onAnswer;
    line.finder.onRefused = this.onRefused;
    line.direction = this.rs485?.direction() ?? null;
    this.lost = false;
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const connecting = this.connect(line);
    try {
      await Promise.race([connecting, new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          timedOut = true;
          reject(new GatewayError('DRIVER_ERROR', `opening ${this.label} took longer than ${this.openTimeoutMs} ms (a wedged adapter?)`));
        }, this.openTimeoutMs);
      })]);
    } catch (err) {
      void line.close().catch(() => {}); // a half-open port must not linger
      // An open that completes after its timeout is closed at once: the bus has moved on.
      if (timedOut) void connecting.then(() => line.close(), () => {}).catch(() => {});
      throw err;
    } finally {
      clearTimeout(timer);
    }
    this.line = line;
  }

  async close(): Promise<void> {
    const line = this.line;
    this.line = null;
    this.settle(new Error(`${this.label} was closed`));
    if (!line) return this.rs485?.afterClose();
    this.lateBefore += line.listener.lateAnswers;
    let guard: NodeJS.Timeout | undefined;
    // A vanished device may never let close() return.
    await Promise.race([line.close().catch(() => {}), new Promise<void>((resolve) => (guard = setTimeout(resolve, 1000)))]);
    clearTimeout(guard);
    this.rs485?.afterClose();
  }

  isOpen(): boolean {
    return this.line !== null && !this.lost && this.line.isOpen;
  }

  onLost(fn: (reason: string) => void): void {
    this.lostHandler = fn;
  }

  onEcho(fn: (note: string) => void): void {
    this.echoHandler = fn;
  }

  onRs485(fn: (note: string) => void): void {
    this.rs485?.onNote(fn);
  }

  /** Whether another master was heard on the line lately (rtu-line.ts SHARED_LINE_MS). */
  shared(): boolean {
    return this.line?.shared() ?? false;
  }

  /** Whether the adapter hands back our own bytes: configured so (`echo: true`), or seen (also with echo off). */
  echoes(): boolean {
    return this.options.echo === true || this.echoSeen;
  }

  private readonly onEchoSeen = (note: string): void => {
    if (this.echoSeen) return;
    this.echoSeen = true;
    this.echoHandler(note);
  };

  present(): boolean {
    return serialPathPresent(this.options.path);
  }

  lastRxAt(): number {
    return this.line?.lastByteAt() ?? 0;
  }

  /**
   * Another master's request not answered yet, a frame heard that is not whole yet, or the other master's
   * turn after a frame on a shared line (rtu-line.ts heldUntil).
   */
  answerPendingUntil(): number {
    return this.line?.heldUntil() ?? 0;
  }

  /**
   * The line reads when the loop polls for I/O: a gateway held up (a GC pause, a busy CPU) would decide
   * the line is quiet while another master's answer waits unread in the kernel, then take it for the
   * answer to its own request. A non-blocking read of the port settles it (unless the loop polled the
   * port a moment ago: rtu-line.ts takePending).
   */
  takePending(polledSince?: number): number {
    return this.line?.takePending(polledSince) ?? 0;
  }

  /**
   * One request, answered or refused as soon as the line says so (rtu-line.ts): bytes heard before it are
   * not its answer, bytes after it that end in silence without one are a garbled frame, an answer after
   * another frame may be someone else's. Then the answer's own checks and the round-trip check.
   */
  request(unit: number, req: WireRequest, timeoutMs: number): Promise<Answer> {
    const line = this.line;
    if (!line || !this.isOpen()) return Promise.reject(new Error(`${this.label} is not open`));
    // The bus owner sends one request at a time; a second one here would be a bug above, not a device fault.
    if (this.outstanding) return Promise.reject(new Error(`${this.label}: a request is still outstanding`));
    const frame = this.frame;
    frame[0] = unit;
    const length = sealRtu(frame, encodeRequestInto(req, frame, 1));
    this.req = req;
    this.raw = false;
    return new Promise<Answer>((resolve, reject) => this.transact(line, unit, length, timeoutMs, resolve, reject));
  }

  /** The frame in `this.frame[0, length)` on the line as the outstanding transaction, settled by resolve/reject. */
  private transact(line: RtuLine, unit: number, length: number, timeoutMs: number, resolve: (data: Answer) => void, reject: (err: Error) => void): void {
    this.unit = unit;
    this.timeoutMs = timeoutMs;
    line.answerWaitMs = timeoutMs;
    this.resolve = resolve;
    this.reject = reject;
    this.outstanding = true;
    this.sentAt = performance.now();
    this.timer = setTimeout(this.onTimeout, timeoutMs);
    line.send(this.frame, length);
  }

  /**
   * One request given as its PDU (the bus doctor's FC 17 and FC 43/14 among others). The line cuts the answer by
   * the function code's length and checks its unit and CRC as for any request; the PDU comes back undecoded.
   */
  exchange(unit: number, pdu: Uint8Array, timeoutMs: number): Promise<RawAnswer> {
    const line = this.line;
    if (!line || !this.isOpen()) return Promise.reject(new Error(`${this.label} is not open`));
    if (this.outstanding) return Promise.reject(new Error(`${this.label}: a request is still outstanding`));
    if (pdu.length < 1 || pdu.length > MAX_FRAME - 3) return Promise.reject(new Error(`a request PDU of ${pdu.length} bytes does not fit a frame`));
    const frame = this.frame;
    frame[0] = unit;
    frame.set(pdu, 1);
    const length = sealRtu(frame, 1 + pdu.length);
    this.req = null;
    this.raw = true;
    this.rawAnswer = null;
    return new Promise<RawAnswer>((resolve, reject) => this.transact(line, unit, length, timeoutMs, () => resolve(this.rawAnswer!),
      (err) => reject(err instanceof WireGarbled && err.bytes === undefined ? new WireGarbled(err.message, bytesIn(err.message)) : err)));
  }

  /**
   * RTU has no transaction ids: a late answer to a timed-out request would be taken as the answer to
   * the next one and the link would stay one frame behind for good (notes §3). Wait until the line
   * has been quiet for `quietMs`, then forget what the line holds of the transaction.
   */
  async drain(quietMs: number, maxMs: number): Promise<void> {
    const line = this.line;
    const start = performance.now();
    const last = (): number => Math.max(start, line?.lastByteAt() ?? 0);
    while (performance.now() - last() < quietMs && performance.now() - start < maxMs) await sleep(Math.max(1, quietMs - (performance.now() - last())));
    line?.clear();
  }

  /** The line's answer to the outstanding request: unit, function and CRC are checked; the rest is checked here. */
  private readonly onAnswer = (buf: Uint8Array, start: number, end: number, more: boolean): boolean => {
    if (this.raw && this.outstanding) {
      const pdu = buf.slice(start + 1, end - 2);
      this.rawAnswer = pdu[0]! & 0x80 ? { kind: 'exception', code: pdu[1] ?? 0 } : { kind: 'answer', pdu };
      this.settle(null);
      return true;
    }
    const req = this.req;
    if (!this.outstanding || !req || !this.line) return true;
    const rtt = performance.now() - this.sentAt;
    const answer = decodeAnswer(req, buf, start + 1, end - 2);
    if (this.lateAhead(this.line, req, rtt, more || (!answer.ok && !('exception' in answer)))) return false;
    if (!answer.ok) {
      this.settle('exception' in answer ? new WireException(answer.exception) : new WireGarbled(answer.malformed));
      return true;
    }
    const rttError = this.checkRoundTrip(this.line, this.unit, req, rtt);
    if (rttError) this.settle(rttError);
    else this.settle(null, answer.data);
    return true;
  };

  /**
   * Whether the answer just read is rather the late answer to our own request of the same unit and function
   * that timed out (its window still open, not heard yet): the slave answers in order, so it is that one when
   * more bytes came right after it (our answer behind it) or it does not fit our request (`behind`: another
   * count), or when it came in under half the unit's usual round trip (it was on its way before our request).
   * Then it is counted and dropped, once; the line goes on waiting for our answer. Otherwise it is taken: a
   * late answer that never came must not cost a good one.
   */
  private lateAhead(line: RtuLine, req: WireRequest, rtt: number, behind: boolean): boolean {
    if (!line.listener.awaitsLate(this.unit, req.fc, performance.now())) return false;
    const usual = this.usualRtt(this.rttKey(this.unit, req), 4);
    if (!behind && !(usual !== null && rtt < usual / 2)) return false;
    line.listener.dropLate();
    return true;
  }

  private readonly onRefused = (reason: string): void => this.settle(new WireGarbled(reason));

  private readonly onTimeout = (): void => {
    this.timer = undefined;
    // Its answer may still come (a slow meter): heard later, it is told apart from another master's traffic.
    if (this.req) this.line?.listener.expectLate(this.unit, this.req.fc, performance.now() + LATE_ANSWER_WINDOW * this.timeoutMs);
    this.settle(new WireTimeout(this.timeoutMs));
  };

  /** Ends the outstanding request with `err`, or with `data` when `err` is null; the line's transaction ends with it. */
  private settle(err: Error | null, data?: Answer): void {
    if (!this.outstanding) return;
    this.outstanding = false;
    this.req = null;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.line?.end();
    if (err) this.reject(err);
    else this.resolve(data);
  }

  /** Late answers to timed-out requests, recognised on the line and dropped. */
  strayAnswers(): number {
    return this.lateBefore + (this.line?.listener.lateAnswers ?? 0);
  }

  private markLost(line: RtuLine, reason: string): void {
    if (line !== this.line || this.lost) return;
    this.lost = true;
    this.settle(new Error(`${this.label}: line ${reason}`));
    this.lostHandler(reason);
  }

  /**
   * An answer faster than the request itself takes on the wire, and than a quarter of this unit's usual
   * round trip, was on its way before the request was: the gateway was held up (a GC pause, a busy CPU)
   * while another master's answer came in, then read it after writing its own request. (Both bounds: on a
   * real line the first holds, over a pty the second.) Only while another master was heard lately
   * (SHARED_LINE_MS): alone on the line, no answer can be someone else's — and a round trip that is only
   * short (a pty, a busy CPU making the usual one long) must not fail a good answer.
   */
  private checkRoundTrip(line: RtuLine, unit: number, req: WireRequest, rtt: number): WireGarbled | null {
    const key = this.rttKey(unit, req);
    // The median is sorted out only on a shared line: alone on it (the usual case) no answer is checked.
    const usual = line.shared() ? this.usualRtt(key, 4) : null;
    const requestBytes = req.fc === 15 ? 9 + Math.ceil(req.values.length / 8) : req.fc === 16 ? 9 + 2 * req.values.length : 8;
    if (usual !== null && rtt < Math.min(requestBytes * this.charMs, usual / 4)) {
      return new WireGarbled(`an answer ${rtt.toFixed(1)} ms after the request, where unit ${unit} takes ${usual.toFixed(0)} ms: it was on its way before the request (someone else's)`);
    }
    let recent = this.rtts.get(key);
    if (!recent) this.rtts.set(key, (recent = []));
    if (recent.length === 8) recent.shift();
    recent.push(rtt);
    return null;
  }

  /** The key of a unit's request shape in `rtts`: a number, not a string, so no allocation per request. */
  private rttKey(unit: number, req: WireRequest): number {
    return (unit * 256 + req.fc) * 65_536 + ('count' in req ? req.count : 0);
  }

  /** The median of the last round trips of this request shape, once there are at least `least` of them. */
  private usualRtt(key: number, least: number): number | null {
    const recent = this.rtts.get(key);
    return recent && recent.length >= least ? [...recent].sort((a, b) => a - b)[recent.length >> 1]! : null;
  }
}
