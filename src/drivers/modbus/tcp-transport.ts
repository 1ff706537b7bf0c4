/**
 * A Modbus TCP link with the gateway's own transaction space (Messaging on TCP/IP Implementation Guide
 * §3.1.3, §4.2). Every request carries an id of ours, 1..65535; an answer is taken only when its id is the
 * outstanding request's (and its unit, function and length fit the request); any other is dropped and
 * counted as stray. An id whose request timed out is not used again on this connection until its late answer
 * has come (or the connection is renewed, which no old answer survives), so a late reply can never be taken
 * for another request's answer — not the next one's, and not one that came round to the same id.
 * (modbus-serial's TCP port numbers requests 0..255 and takes any answer with the outstanding id: a reply
 * 256 requests late was delivered as the answer to the request with that id; see docs/modbus.md.)
 */
import { connect, type Socket } from 'node:net';
import { decodeAnswer, encodeRequest } from '../../protocol/modbus/client-pdu.js';
import { encodeMbap, MbapParser, type MbapFrame } from '../../protocol/modbus/mbap.js';
import { TransactionIds } from '../../protocol/modbus/transaction-ids.js';
import { WireException, WireGarbled, WireTimeout, type ModbusTransport, type RawAnswer, type WireRequest } from './transport.js';

/** Timed-out ids still waiting for their answer; at this many the connection is renewed to free them all. */
export const MAX_UNANSWERED = 256;

interface Outstanding {
  tid: number;
  unit: number;
  /** null: a raw exchange, whose answer goes to `raw` undecoded. */
  req: WireRequest | null;
  raw?: (answer: RawAnswer) => void;
  resolve: (data: number[] | boolean[] | undefined) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export class TcpTransport implements ModbusTransport {
  readonly kind = 'tcp' as const;
  readonly label: string;
  private socket: Socket | null = null;
  private parser = new MbapParser();
  private lost = false;
  private lostHandler: (reason: string) => void = () => {};
  private readonly ids = new TransactionIds();
  private outstanding: Outstanding | null = null;
  private stray = 0;

  constructor(private readonly host: string, private readonly port: number, private readonly connectTimeoutMs: number) {
    this.label = `${host}:${port}`;
  }

  async open(): Promise<void> {
    await this.close();
    const socket = await new Promise<Socket>((resolve, reject) => {
      const s = connect({ host: this.host, port: this.port });
      const fail = (err: Error): void => {
        clearTimeout(timer);
        s.destroy();
        reject(err);
      };
      const timer = setTimeout(() => fail(new Error(`connect to ${this.label} timed out`)), this.connectTimeoutMs);
      s.once('error', fail);
      s.once('connect', () => {
        clearTimeout(timer);
        s.off('error', fail);
        resolve(s);
      });
    });
    socket.setNoDelay(true);
    this.parser = new MbapParser();
    this.ids.renew(); // no answer sent on the old connection can come on this one
    this.lost = false;
    this.socket = socket;
    socket.on('data', (chunk: Buffer) => this.onData(socket, chunk));
    socket.on('error', (err) => this.markLost(socket, `error: ${err.message}`));
    socket.on('close', () => this.markLost(socket, 'closed'));
  }

  async close(): Promise<void> {
    const socket = this.socket;
    this.socket = null;
    this.settle(null, new Error(`${this.label} was closed`));
    if (!socket || socket.destroyed) return;
    await new Promise<void>((resolve) => {
      const guard = setTimeout(() => { socket.destroy(); resolve(); }, 1000); // a peer that never closes its side
      socket.once('close', () => { clearTimeout(guard); resolve(); });
      socket.end();
    });
  }

  isOpen(): boolean {
    return this.socket !== null && !this.lost && this.socket.readyState === 'open';
  }

  onLost(fn: (reason: string) => void): void {
    this.lostHandler = fn;
  }

  /** Answers dropped because they answer no outstanding request (late replies, ids never sent). */
  strayAnswers(): number {
    return this.stray;
  }

  request(unit: number, req: WireRequest, timeoutMs: number): Promise<number[] | boolean[] | undefined> {
    return new Promise((resolve, reject) => this.send(unit, encodeRequest(req), timeoutMs, { req, resolve, reject }));
  }

  /** One request given as its PDU (the bus doctor's FC 17, FC 43/14): the answer's PDU comes back undecoded. */
  exchange(unit: number, pdu: Uint8Array, timeoutMs: number): Promise<RawAnswer> {
    return new Promise((resolve, reject) => this.send(unit, pdu, timeoutMs, { req: null, raw: resolve, resolve: () => {}, reject }));
  }

  private send(unit: number, pdu: Uint8Array, timeoutMs: number, o: Pick<Outstanding, 'req' | 'raw' | 'resolve' | 'reject'>): void {
    const { reject } = o;
    const socket = this.socket;
    if (!socket || !this.isOpen()) return reject(new Error(`${this.label} is not open`));
    // The bus owner sends one request at a time; a second one here would be a bug above, not a device fault.
    if (this.outstanding) return reject(new Error(`${this.label}: a request is still outstanding`));
    const tid = this.ids.next();
    const timer = setTimeout(() => {
      if (this.outstanding?.tid !== tid) return;
      this.outstanding = null;
      this.ids.timedOut(tid);
      reject(new WireTimeout(timeoutMs));
      if (this.ids.pending >= MAX_UNANSWERED) {
        this.markLost(socket, `${MAX_UNANSWERED} answers never came; a new connection frees their transaction ids`);
        socket.destroy();
      }
    }, timeoutMs);
    this.outstanding = { tid, unit, req: o.req, raw: o.raw, resolve: o.resolve, reject, timer };
    socket.write(encodeMbap(tid, unit, pdu));
  }

  async drain(quietMs: number): Promise<void> {
    await sleep(quietMs); // nothing to drop: a late answer is recognised by its id whenever it comes
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

  private onData(socket: Socket, chunk: Buffer): void {
    if (socket !== this.socket) return;
    const { frames, error } = this.parser.push(chunk);
    for (const frame of frames) this.onFrame(frame);
    if (error) {
      // Out of step for good: no later byte on this stream can be trusted to start a frame.
      this.markLost(socket, `not Modbus TCP: ${error}`);
      socket.destroy();
    }
  }

  private onFrame(frame: MbapFrame): void {
    const o = this.outstanding;
    if (!o || frame.tid !== o.tid) {
      this.ids.lateAnswer(frame.tid); // its id may be used again
      this.stray++;
      return;
    }
    if (frame.unit !== o.unit) {
      this.settle(null, new WireGarbled(`the answer to transaction ${frame.tid} names unit ${frame.unit}, not ${o.unit}`));
      return;
    }
    if (!o.req) {
      const pdu = frame.pdu;
      this.outstanding = null;
      clearTimeout(o.timer);
      if (pdu.length < 1) o.reject(new WireGarbled('an empty answer', 0));
      else o.raw?.(pdu[0]! & 0x80 ? { kind: 'exception', code: pdu[1] ?? 0 } : { kind: 'answer', pdu });
      return;
    }
    const answer = decodeAnswer(o.req, frame.pdu);
    if (answer.ok) this.settle(answer.data);
    else if ('exception' in answer) this.settle(null, new WireException(answer.exception));
    else this.settle(null, new WireGarbled(answer.malformed));
  }

  /** Ends the outstanding request with `data`, or with `err` when given. */
  private settle(data: number[] | boolean[] | undefined | null, err?: Error): void {
    const o = this.outstanding;
    if (!o) return;
    this.outstanding = null;
    clearTimeout(o.timer);
    if (err) o.reject(err);
    else o.resolve(data ?? undefined);
  }

  private markLost(socket: Socket, reason: string): void {
    if (socket !== this.socket || this.lost) return;
    this.lost = true;
    this.settle(null, new Error(`${this.label}: connection ${reason}`));
    this.lostHandler(reason);
  }
}
