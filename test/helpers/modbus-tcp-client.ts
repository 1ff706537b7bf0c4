/**
 * A Modbus TCP client written from the spec (Messaging on TCP/IP Implementation Guide §3.1.3) for tests:
 * it sends raw request PDUs with the transaction id and unit the test chooses (duplicates, pipelining) and
 * hands back every answer frame in the order it came, so a test sees exactly what a client would.
 */
import { connect, type Socket } from 'node:net';

export interface Answer {
  tid: number;
  unit: number;
  pdu: number[];
}

export class RawModbusClient {
  private buf = Buffer.alloc(0);
  private readonly answers: Answer[] = [];
  private waiter: (() => void) | null = null;
  closed = false;

  private constructor(private readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.buf = Buffer.concat([this.buf, chunk]);
      while (this.buf.length >= 6) {
        const length = this.buf.readUInt16BE(4);
        if (this.buf.length < 6 + length) break;
        this.answers.push({ tid: this.buf.readUInt16BE(0), unit: this.buf[6]!, pdu: [...this.buf.subarray(7, 6 + length)] });
        this.buf = this.buf.subarray(6 + length);
      }
      this.waiter?.();
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      this.closed = true;
      this.waiter?.();
    });
  }

  static open(port: number, host = '127.0.0.1', timeoutMs = 3000): Promise<RawModbusClient> {
    return new Promise((resolve, reject) => {
      const socket = connect({ port, host });
      const timer = setTimeout(() => { socket.destroy(); reject(new Error(`connect to ${host}:${port} timed out`)); }, timeoutMs);
      socket.once('connect', () => { clearTimeout(timer); resolve(new RawModbusClient(socket)); });
      socket.once('error', (err) => { clearTimeout(timer); reject(err); });
    });
  }

  send(tid: number, unit: number, pdu: readonly number[]): void {
    const head = Buffer.alloc(7);
    head.writeUInt16BE(tid, 0);
    head.writeUInt16BE(0, 2);
    head.writeUInt16BE(pdu.length + 1, 4);
    head[6] = unit;
    this.socket.write(Buffer.concat([head, Buffer.from(pdu)]));
  }

  /** The next answer in arrival order; rejects after `timeoutMs` or when the server closed the connection. */
  async next(timeoutMs = 3000): Promise<Answer> {
    const end = Date.now() + timeoutMs;
    while (this.answers.length === 0) {
      if (this.closed) throw new Error('connection closed by the server');
      const left = end - Date.now();
      if (left <= 0) throw new Error(`no answer within ${timeoutMs} ms`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiter = () => { clearTimeout(timer); resolve(); };
      });
      this.waiter = null;
    }
    return this.answers.shift()!;
  }

  async request(tid: number, unit: number, pdu: readonly number[], timeoutMs = 3000): Promise<Answer> {
    this.send(tid, unit, pdu);
    return this.next(timeoutMs);
  }

  close(): void {
    this.socket.destroy();
  }
}

/** Request PDUs. */
export const read = (fc: 1 | 2 | 3 | 4, address: number, count: number): number[] => [fc, address >> 8, address & 0xff, count >> 8, count & 0xff];
export const writeRegister = (address: number, value: number): number[] => [6, address >> 8, address & 0xff, value >> 8, value & 0xff];
export const writeRegisters = (address: number, values: readonly number[]): number[] =>
  [16, address >> 8, address & 0xff, 0, values.length, values.length * 2, ...values.flatMap((v) => [v >> 8, v & 0xff])];
