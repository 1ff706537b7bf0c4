/**
 * One link to Modbus slaves (a serial port or a TCP connection). The bus owner above it guarantees one
 * request at a time; this layer only speaks the wire and reports a closed link. The serial link wraps
 * modbus-serial on a line of its own (ClientTransport, rtu-transport.ts, rtu-line.ts); the TCP link speaks
 * MBAP itself (tcp-transport.ts) to keep a transaction space of its own. A fresh modbus-serial client and
 * line are built on every open: modbus-serial drops its data listener from the port on close.
 */
import M from 'modbus-serial';
import type { ModbusTable } from '../../protocol/modbus/address.js';
import { GatewayError } from '../../core/errors.js';
import type { RawRequest } from '../types.js';

// The d.ts is CJS with `export default`; under NodeNext the class is on `.default` (notes/packages.md §3).
export const ModbusRTU = M.default;

/** A request as it goes on the wire: the same shape a Modbus server forwards (drivers/types.ts). */
export type WireRequest = RawRequest;

export const READ_FC: Record<ModbusTable, 1 | 2 | 3 | 4> = { coil: 1, discrete: 2, holding: 3, input: 4 };

export interface ModbusTransport {
  readonly kind: 'rtu' | 'tcp';
  /** `/dev/ttyUSB0` or `192.168.1.50:502`, for messages and metrics. */
  readonly label: string;
  open(): Promise<void>;
  close(): Promise<void>;
  isOpen(): boolean;
  /** Called once when an open link goes away by itself (unplug, peer close, I/O error). */
  onLost(fn: (reason: string) => void): void;
  /** One request/response; resolves with registers (FC3/4) or bits (FC1/2, sliced to count). */
  request(unit: number, req: WireRequest, timeoutMs: number): Promise<number[] | boolean[] | undefined>;
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
   */
  takePending?(): number;
  /** Whether the device to open exists now (a serial port's path), or undefined when the link cannot tell. */
  present?(): boolean | undefined;
  /** Answers dropped because they answer no outstanding request (Modbus TCP: a late reply, an unknown id). */
  strayAnswers?(): number;
}

/** A modbus-serial client (what ClientTransport subclasses connect). */
export type Client = InstanceType<typeof ModbusRTU>;

export interface RtuOptions {
  path: string;
  baudRate: number;
  parity: 'none' | 'even' | 'odd';
  dataBits: 5 | 6 | 7 | 8;
  stopBits: 1 | 2;
}

/** Timeout errors from modbus-serial are not `instanceof Error` (notes §3): wrap them in one. */
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
  constructor(message: string) {
    super(message);
    this.name = 'WireGarbled';
  }
}

function quietClose(client: Client): void {
  try {
    client.close(() => {});
  } catch {
    // nothing was open
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export abstract class ClientTransport implements ModbusTransport {
  abstract readonly kind: 'rtu' | 'tcp';
  abstract readonly label: string;
  protected client: Client | null = null;
  private lostHandler: (reason: string) => void = () => {};
  private lost = false;

  protected abstract connect(client: Client): Promise<void>;

  /**
   * A fresh client for each open, on a port of the link's own (modbus-serial's close() removes its 'error'
   * listener from the port, so the port must keep one of its own: a dying port can still emit one).
   */
  protected abstract newClient(): Client;

  /**
   * How long an open may take. A wedged USB adapter can leave open() pending forever, which would hold
   * the bus (and its reopen loop) with it: past this the open fails and the bus's reopen backoff goes on.
   */
  protected openTimeoutMs = 5000;

  async open(): Promise<void> {
    await this.close();
    const client = this.newClient();
    // modbus-serial re-emits port errors; an EventEmitter 'error' without a listener would kill the process.
    client.on('error', (err: unknown) => this.markLost(`error: ${String((err as Error)?.message ?? err)}`));
    client.on('close', () => this.markLost('closed'));
    this.lost = false;
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const connecting = this.connect(client);
    try {
      await Promise.race([connecting, new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          timedOut = true;
          reject(new GatewayError('DRIVER_ERROR', `opening ${this.label} took longer than ${this.openTimeoutMs} ms (a wedged adapter?)`));
        }, this.openTimeoutMs);
      })]);
    } catch (err) {
      quietClose(client); // a half-open socket or port must not linger
      // An open that completes after its timeout is closed at once: the bus has moved on.
      if (timedOut) void connecting.then(() => quietClose(client), () => {});
      throw err;
    } finally {
      clearTimeout(timer);
    }
    this.client = client;
  }

  private markLost(reason: string): void {
    if (this.lost || !this.client) return;
    this.lost = true;
    this.lostHandler(reason);
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    if (!client) return;
    await new Promise<void>((resolve) => {
      const guard = setTimeout(resolve, 1000); // a vanished device may never call back
      try {
        client.close(() => { clearTimeout(guard); resolve(); });
      } catch {
        clearTimeout(guard);
        resolve();
      }
    });
  }

  isOpen(): boolean {
    return this.client !== null && !this.lost && this.client.isOpen;
  }

  onLost(fn: (reason: string) => void): void {
    this.lostHandler = fn;
  }

  async request(unit: number, req: WireRequest, timeoutMs: number): Promise<number[] | boolean[] | undefined> {
    const client = this.client;
    if (!client || !this.isOpen()) throw new Error(`${this.label} is not open`);
    client.setID(unit);
    // modbus-serial's default timeout is null: a silent slave would never settle (notes §3).
    client.setTimeout(timeoutMs);
    let guard: NodeJS.Timeout | undefined;
    const watchdog = new Promise<never>((_, reject) => {
      guard = setTimeout(() => reject(new WireTimeout(timeoutMs)), timeoutMs + 250);
    });
    try {
      return await Promise.race([this.send(client, req), watchdog]);
    } catch (err) {
      const e = err as { errno?: string; name?: string };
      if (e && (e.errno === 'ETIMEDOUT' || e.name === 'TransactionTimedOutError')) throw new WireTimeout(timeoutMs);
      throw err instanceof Error ? err : new Error(String(err));
    } finally {
      clearTimeout(guard);
    }
  }

  private async send(client: Client, req: WireRequest): Promise<number[] | boolean[] | undefined> {
    switch (req.fc) {
      case 1: return (await client.readCoils(req.address, req.count)).data.slice(0, req.count);
      case 2: return (await client.readDiscreteInputs(req.address, req.count)).data.slice(0, req.count);
      case 3: return (await client.readHoldingRegisters(req.address, req.count)).data;
      case 4: return (await client.readInputRegisters(req.address, req.count)).data;
      case 5: await client.writeCoil(req.address, req.value); return undefined;
      case 6: await client.writeRegister(req.address, req.value); return undefined;
      case 15: await client.writeCoils(req.address, req.values); return undefined;
      case 16: await client.writeRegisters(req.address, req.values); return undefined;
    }
  }

  async drain(quietMs: number, maxMs: number): Promise<void> {
    await sleep(quietMs);
  }

  lastRxAt(): number {
    return 0;
  }

  answerPendingUntil(): number {
    return 0;
  }

  takePending(): number {
    return 0;
  }

  present(): boolean | undefined {
    return undefined;
  }
}
