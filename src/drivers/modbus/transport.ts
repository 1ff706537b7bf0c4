/**
 * One link to Modbus slaves (a serial port or a TCP connection). The bus owner above it guarantees one
 * request at a time; this layer only speaks the wire and reports a closed link. The serial link is the
 * gateway's own RTU master on a line of its own (rtu-transport.ts, rtu-line.ts); the TCP link speaks MBAP
 * (tcp-transport.ts) with a transaction space of its own. Both encode requests and check answers with
 * protocol/modbus/client-pdu.ts.
 */
import type { ModbusTable } from '../../protocol/modbus/address.js';
import type { KernelRs485 } from '../../protocol/modbus/rs485.js';
import type { RawRequest } from '../types.js';

/** A request as it goes on the wire: the same shape a Modbus server forwards (drivers/types.ts). */
export type WireRequest = RawRequest;

export const READ_FC: Record<ModbusTable, 1 | 2 | 3 | 4> = { coil: 1, discrete: 2, holding: 3, input: 4 };

/** A raw exchange's outcome (ModbusTransport.exchange): a valid frame from the unit asked. */
export type RawAnswer = { kind: 'answer'; pdu: Uint8Array } | { kind: 'exception'; code: number };

export interface ModbusTransport {
  readonly kind: 'rtu' | 'tcp';
  /** `/dev/ttyUSB0` or `192.168.1.50:502`, for messages and metrics. */
  readonly label: string;
  open(): Promise<void>;
  close(): Promise<void>;
  isOpen(): boolean;
  /** Called once when an open link goes away by itself (unplug, peer close, I/O error). */
  onLost(fn: (reason: string) => void): void;
  /** Called once when the link sees its adapter hand back what it sent (an RS-485 converter without echo suppression). */
  onEcho?(fn: (note: string) => void): void;
  /** Called once when the port refuses the bus's `rs485` setting (a pty, a USB adapter with automatic direction); the link runs on. */
  onRs485?(fn: (note: string) => void): void;
  /** Whether the adapter hands back our own bytes: configured so, or seen (RTU; the bus doctor reports it). */
  echoes?(): boolean;
  /** One request/response; resolves with registers (FC3/4) or bits (FC1/2, sliced to count). */
  request(unit: number, req: WireRequest, timeoutMs: number): Promise<number[] | boolean[] | undefined>;
  /**
   * One request given as its PDU (function code first), for what `request` does not decode (FC 17, FC 43/14:
   * the bus doctor). Resolves with the answer's PDU or the exception's code; rejects as `request` does
   * (WireTimeout, WireGarbled, a closed link). Absent on a link that cannot send one.
   */
  exchange?(unit: number, pdu: Uint8Array, timeoutMs: number): Promise<RawAnswer>;
  /** After a timeout: wait until the line is quiet, then drop half-received bytes (late answers). */
  drain(quietMs: number, maxMs: number): Promise<void>;
  /** When the last byte was heard on the line from anyone (performance.now()); 0 when the link cannot tell (TCP). */
  lastRxAt?(): number;
  /**
   * Until when the line is not free for another reason than t3.5 of silence: another master's request heard
   * may still be answered, a frame heard has not ended yet, or another master's turn after a frame on a
   * shared line (0: none now).
   */
  answerPendingUntil?(): number;
  /**
   * Takes in, synchronously, what has come but was not read yet (the event loop was held up); returns how
   * many bytes. They came before the next request, so they are heard but never taken for its answer.
   * `polledSince`: a moment before the loop last polled for I/O, when the link may vouch for what it polled.
   */
  takePending?(polledSince?: number): number;
  /** Whether the device to open exists now (a serial port's path), or undefined when the link cannot tell. */
  present?(): boolean | undefined;
  /** Answers dropped because they answer no outstanding request (Modbus TCP: a late reply, an unknown id). */
  strayAnswers?(): number;
}

export interface RtuOptions {
  path: string;
  baudRate: number;
  parity: 'none' | 'even' | 'odd';
  dataBits: 5 | 6 | 7 | 8;
  stopBits: 1 | 2;
  /** The adapter hands back what we send (bus option `echo`): our own bytes are dropped; `auto`: turned on when seen. */
  echo?: boolean | 'auto';
  /** Bus option `rs485`: RS-485 mode set in the kernel on each open, or a DE pin (BCM) the gateway drives around each frame. */
  rs485?: Rs485Setting;
}

export type Rs485Setting = ({ mode: 'kernel' } & KernelRs485) | { mode: 'gpio'; dePin: number };

/** No answer within the request's timeout. */
export class WireTimeout extends Error {
  constructor(readonly timeoutMs: number) {
    super(`no answer within ${timeoutMs} ms`);
    this.name = 'WireTimeout';
  }
}

/**
 * What came back is not (or cannot be trusted to be) the answer to this request: bytes that ended in silence
 * without a frame that answers it (a lost character, another unit's or master's frame — nothing more is
 * coming, so the timeout is not waited out), or an answer that followed another frame (someone else's).
 */
export class WireGarbled extends Error {
  /** `bytes`: how many came back, when the link can tell (the bus doctor reports it). */
  constructor(message: string, readonly bytes?: number) {
    super(message);
    this.name = 'WireGarbled';
  }
}

/** A Modbus exception answer, in the shape errors.ts classifies (`modbusCode`). */
export class WireException extends Error {
  constructor(readonly modbusCode: number) {
    super(`Modbus exception ${modbusCode}`);
    this.name = 'WireException';
  }
}
