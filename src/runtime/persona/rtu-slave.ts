/**
 * A Modbus RTU slave on its own serial port serving a server's units (door/unit-table.ts): personas from
 * their snapshots, a device's own registers through its bus owner. Frames are cut by the length their
 * function code gives and checked by CRC (protocol/modbus/frame.ts), not by waiting for an idle gap, so
 * an answer can start as soon as t3.5 has passed after the request's last byte. It answers only its
 * configured unit ids, never a broadcast (unit 0), and leaves alone frames that parse as another slave's
 * responses. An answer that is ready only after the master has sent another request (a device unit's read
 * that went to its bus and took longer than the master waits) is not sent: the master has moved on, and the
 * answer would collide with its next request or be taken for that one's. The port is the same byte source with
 * timestamps as a bus's master (drivers/modbus/serial-bytes.ts), reopened by the same policy (reopen.ts).
 */
import type { RtuServerConfig } from '../../config/types.js';
import type { Clock } from '../../core/clock.js';
import { Reopener, REOPEN_MAX_MS, REOPEN_MIN_MS } from '../../drivers/modbus/reopen.js';
import { SerialBytes, serialPathPresent, type LineBinding } from '../../drivers/modbus/serial-bytes.js';
import { FrameSplitter, sealRtu } from '../../protocol/modbus/frame.js';
import { silenceMs } from '../../protocol/modbus/wire-cost.js';
import type { Logger } from '../../util/logger.js';
import type { UnitAnswer } from '../door/unit-table.js';

/** How long after a request a frame that parses as its answer is taken for another slave's answer. */
const ANSWER_WINDOW_MS = 1000;
/**
 * Silence that drops a half-assembled frame. At least 10 ms: the event loop and USB adapters hand bytes
 * over late and in bursts, and the length already tells where a frame ends; the gap only clears noise.
 */
const MIN_GAP_MS = 10;

export type { UnitAnswer };

export interface RtuSlaveStats {
  requests: number;
  answered: number;
  silent: number;
  otherUnits: number;
  broadcasts: number;
  responses: number;
  discardedBytes: number;
  /** Answers ready only after the master had sent another request: not sent. */
  superseded: number;
  /** Request's last byte heard -> answer handed to the port, ms: the latest, the smallest (null before the first) and the largest. */
  replyMs: number;
  replyMsMin: number | null;
  replyMsMax: number;
  /** Whether the port is open now; times it went away; times it was opened again. */
  open: boolean;
  lost: number;
  reopened: number;
  /** Why the last attempt to open the port failed, while it is not open; null once it is. */
  error: string | null;
}

export class RtuPersonaSlave {
  private bytes: SerialBytes | null = null;
  private readonly t35: number;
  private readonly splitter: FrameSplitter;
  private readonly reopener: Reopener;
  private readonly rx = Buffer.alloc(512);
  private chain: Promise<void> = Promise.resolve();
  private stopped = false;
  /** Monotonic time the port went away (for the log line when it is back); null while it is open or never was. */
  private lostAt: number | null = null;
  /** When the last request on the line (to any unit) ended, monotonic ms. */
  private lastRequestAt = -Infinity;
  readonly counts: RtuSlaveStats = {
    requests: 0, answered: 0, silent: 0, otherUnits: 0, broadcasts: 0, responses: 0, discardedBytes: 0, superseded: 0, replyMs: 0, replyMsMin: null, replyMsMax: 0,
    open: false, lost: 0, reopened: 0, error: null,
  };

  /** `binding`: what opens the port (a test wraps serialport's). */
  constructor(private readonly config: RtuServerConfig, private readonly units: ReadonlyMap<number, UnitAnswer>, private readonly clock: Clock,
    private readonly log: Logger, private readonly binding?: LineBinding) {
    this.t35 = silenceMs(config.baud_rate);
    this.splitter = new FrameSplitter({ gapMs: Math.max(this.t35, MIN_GAP_MS), answerWindowMs: ANSWER_WINDOW_MS }, {
      request: (buf, start, end, at) => this.request(buf, start, end, at),
      response: () => void this.counts.responses++,
      discard: (n) => void (this.counts.discardedBytes += n),
    });
    this.reopener = new Reopener({
      minMs: REOPEN_MIN_MS, maxMs: REOPEN_MAX_MS,
      open: () => this.open(),
      present: () => serialPathPresent(config.port),
      failed: (err) => void (this.counts.error = err.message),
    });
  }

  /**
   * Opens the port. One that is not there yet (a USB adapter plugged in after boot, a device node that
   * appears late) is tried again with the same backoff as after a loss, and served as soon as it opens.
   */
  async start(): Promise<void> {
    this.stopped = false;
    if (await this.reopener.start()) {
      this.log.info({ server: this.config.id, port: this.config.port, units: [...this.units.keys()] }, 'modbus RTU server listening');
      return;
    }
    this.lostAt = this.clock.mono();
    this.log.warn({ server: this.config.id, port: this.config.port, err: this.counts.error },
      'persona serial port cannot be opened; trying again until it can');
  }

  /** The serial device this slave serves on. */
  get path(): string {
    return this.config.port;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.reopener.stop();
    const bytes = this.bytes;
    this.bytes = null;
    this.counts.open = false;
    await this.chain;
    await bytes?.close();
  }

  private async open(): Promise<void> {
    const { port: path, baud_rate: baudRate, data_bits: dataBits, stop_bits: stopBits, parity } = this.config;
    const bytes: SerialBytes = new SerialBytes({ path, baudRate, dataBits, stopBits, parity }, () => {
      // What waits, read now and stamped: the splitter cuts it into frames by their lengths.
      for (let n = bytes.read(this.rx, 0, this.rx.length); n > 0; n = n < this.rx.length ? 0 : bytes.read(this.rx, 0, this.rx.length)) {
        this.splitter.push(this.rx, this.clock.mono(), 0, n);
      }
      bytes.poll();
    }, this.binding);
    bytes.on('error', (err: Error) => this.log.error({ server: this.config.id, err }, 'persona serial port error'));
    // An adapter unplugged (or a pty whose other side closed) closes the port: open it again until it is back.
    bytes.on('close', () => this.lose(bytes));
    await bytes.open();
    if (this.stopped) {
      await bytes.close();
      return;
    }
    this.bytes = bytes;
    this.counts.open = true;
    this.counts.error = null;
    if (this.lostAt !== null) {
      this.counts.reopened++;
      this.log.info({ server: this.config.id, port: this.config.port, downMs: Math.round(this.clock.mono() - this.lostAt) }, 'persona serial port open again');
      this.lostAt = null;
    }
  }

  private lose(bytes: SerialBytes): void {
    if (this.stopped || this.bytes !== bytes) return;
    this.bytes = null;
    this.counts.open = false;
    this.counts.lost++;
    this.lostAt = this.clock.mono();
    this.log.warn({ server: this.config.id, port: this.config.port }, 'persona serial port went away; opening it again until it is back');
    this.reopener.schedule(0);
  }

  private request(buf: Uint8Array, start: number, end: number, at: number): void {
    this.counts.requests++;
    this.lastRequestAt = at;
    const unit = buf[start]!;
    if (unit === 0) {
      this.counts.broadcasts++;
      return;
    }
    const answer = this.units.get(unit);
    if (!answer) {
      this.counts.otherUnits++;
      return;
    }
    // The view is valid only during this call: the PDU is copied before anything awaits.
    const pdu = buf.slice(start + 1, end - 2);
    // One request at a time, in order: the line is half duplex.
    this.chain = this.chain.then(() => this.reply(unit, answer, pdu, at)).catch((err: unknown) =>
      this.log.error({ server: this.config.id, err }, 'persona request failed'));
  }

  private async reply(unit: number, answer: UnitAnswer, pdu: Uint8Array, at: number): Promise<void> {
    const out = await answer(pdu);
    if (!out) {
      this.counts.silent++;
      return;
    }
    const frame = Buffer.allocUnsafe(out.length + 3);
    frame[0] = unit;
    frame.set(out, 1);
    sealRtu(frame, out.length + 1);
    // Never before t3.5 after the request's last byte: the master must see the request's end first.
    // (A timer may fire up to a millisecond early against the monotonic clock: checked again until due.)
    const due = at + this.t35;
    while (this.clock.mono() < due) await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.ceil(due - this.clock.mono()))));
    if (!this.bytes) return;
    if (this.lastRequestAt > at) {
      this.counts.superseded++;
      return;
    }
    this.bytes.write(frame, 0, frame.length);
    this.counts.answered++;
    this.counts.replyMs = this.clock.mono() - at;
    this.counts.replyMsMax = Math.max(this.counts.replyMsMax, this.counts.replyMs);
    this.counts.replyMsMin = Math.min(this.counts.replyMsMin ?? Infinity, this.counts.replyMs);
  }
}
