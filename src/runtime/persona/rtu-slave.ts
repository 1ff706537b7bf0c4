/**
 * A Modbus RTU slave on its own serial port serving persona units. Frames are cut by the length their
 * function code gives and checked by CRC (protocol/modbus/frame.ts), not by waiting for an idle gap, so
 * an answer can start as soon as t3.5 has passed after the request's last byte. It answers only its
 * configured unit ids, never a broadcast (unit 0), and leaves alone frames that parse as another slave's
 * responses. Its answers come from the personas' snapshots: it never waits on a bus owner's queue.
 */
import { SerialPort } from 'serialport';
import type { RtuServerConfig } from '../../config/types.js';
import type { Clock } from '../../core/clock.js';
import { crc16, FrameSplitter } from '../../protocol/modbus/frame.js';
import { silenceMs } from '../../protocol/modbus/wire-cost.js';
import type { Logger } from '../../util/logger.js';

/** How long after a request a frame that parses as its answer is taken for another slave's answer. */
const ANSWER_WINDOW_MS = 1000;
/**
 * Silence that drops a half-assembled frame. At least 10 ms: the event loop and USB adapters hand bytes
 * over late and in bursts, and the length already tells where a frame ends; the gap only clears noise.
 */
const MIN_GAP_MS = 10;

export type UnitAnswer = (pdu: Uint8Array) => Promise<Uint8Array | null>;

export interface RtuSlaveStats {
  requests: number;
  answered: number;
  silent: number;
  otherUnits: number;
  broadcasts: number;
  responses: number;
  discardedBytes: number;
  /** Request's last byte heard -> answer handed to the port, ms: the latest and the largest. */
  replyMs: number;
  replyMsMax: number;
}

export class RtuPersonaSlave {
  private port: SerialPort | null = null;
  private readonly t35: number;
  private readonly splitter: FrameSplitter;
  private chain: Promise<void> = Promise.resolve();
  readonly counts: RtuSlaveStats = { requests: 0, answered: 0, silent: 0, otherUnits: 0, broadcasts: 0, responses: 0, discardedBytes: 0, replyMs: 0, replyMsMax: 0 };

  constructor(private readonly config: RtuServerConfig, private readonly units: ReadonlyMap<number, UnitAnswer>, private readonly clock: Clock, private readonly log: Logger) {
    this.t35 = silenceMs(config.baud_rate);
    this.splitter = new FrameSplitter({ gapMs: Math.max(this.t35, MIN_GAP_MS), answerWindowMs: ANSWER_WINDOW_MS }, {
      request: (buf, start, end, at) => this.request(buf, start, end, at),
      response: () => void this.counts.responses++,
      discard: (n) => void (this.counts.discardedBytes += n),
    });
  }

  async start(): Promise<void> {
    const { port: path, baud_rate: baudRate, data_bits: dataBits, stop_bits: stopBits, parity } = this.config;
    const port = new SerialPort({ path, baudRate, dataBits, stopBits, parity, autoOpen: false });
    await new Promise<void>((resolve, reject) => port.open((err) => (err ? reject(err) : resolve())));
    port.on('data', (chunk: Buffer) => this.splitter.push(chunk, this.clock.mono()));
    port.on('error', (err) => this.log.error({ server: this.config.id, err }, 'persona serial port error'));
    this.port = port;
    this.log.info({ server: this.config.id, port: path, units: [...this.units.keys()] }, 'modbus RTU persona slave listening');
  }

  async stop(): Promise<void> {
    const port = this.port;
    this.port = null;
    await this.chain;
    if (port?.isOpen) await new Promise<void>((resolve) => port.close(() => resolve()));
  }

  private request(buf: Uint8Array, start: number, end: number, at: number): void {
    this.counts.requests++;
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
    const crc = crc16(frame, 0, out.length + 1);
    frame[out.length + 1] = crc & 0xff;
    frame[out.length + 2] = crc >> 8;
    // Never before t3.5 after the request's last byte: the master must see the request's end first.
    // (A timer may fire up to a millisecond early against the monotonic clock: checked again until due.)
    const due = at + this.t35;
    while (this.clock.mono() < due) await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.ceil(due - this.clock.mono()))));
    if (!this.port) return;
    this.port.write(frame);
    this.counts.answered++;
    this.counts.replyMs = this.clock.mono() - at;
    this.counts.replyMsMax = Math.max(this.counts.replyMsMax, this.counts.replyMs);
  }
}
