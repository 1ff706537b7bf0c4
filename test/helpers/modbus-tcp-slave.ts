/**
 * A Modbus TCP slave written from the spec (Messaging on TCP/IP Implementation Guide §3.1.3, Application
 * Protocol §6.3/6.4) that a test can script: it answers FC3/FC4 with register `address` of unit `u` holding
 * (u * 1000 + address) & 0xffff, so every answer tells which request it belongs to, and it can hold back
 * the answer to one request and send it later with its old transaction id — a late reply, as an RS-485/TCP
 * gateway with a queue of its own sends one — just before it answers a later request.
 */
import { createServer, type Server, type Socket } from 'node:net';

export interface SeenRequest {
  tid: number;
  unit: number;
  fc: number;
  address: number;
  count: number;
}

export interface LateReply {
  /** The transaction id the late reply carried (its own request's). */
  tid: number;
  /** The transaction id of the request that was outstanding when it was sent. */
  outstanding: number;
}

export const slaveValue = (unit: number, address: number): number => (unit * 1000 + address) & 0xffff;

export class ScriptedTcpSlave {
  readonly seen: SeenRequest[] = [];
  readonly late: LateReply[] = [];
  private held: { bytes: Buffer; tid: number; releaseAt: number } | null = null;
  private holdAfter = -1;
  private readonly sockets = new Set<Socket>();

  private constructor(private readonly server: Server, readonly port: number) {}

  static async start(): Promise<ScriptedTcpSlave> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const slave = new ScriptedTcpSlave(server, (server.address() as { port: number }).port);
    server.on('connection', (socket) => slave.serve(socket));
    return slave;
  }

  /**
   * The next request is not answered at once: its answer is sent, with its own transaction id, right
   * before the answer to the request `laterBy` requests after it (1: the very next one).
   */
  holdNext(laterBy: number): void {
    this.holdAfter = laterBy;
  }

  /** Whether a held answer is still waiting to be sent. */
  get holding(): boolean {
    return this.held !== null || this.holdAfter >= 0;
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    socket.on('error', () => {});
    let buf = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      while (buf.length >= 7) {
        const length = buf.readUInt16BE(4);
        if (buf.length < 6 + length) break;
        this.onRequest(socket, buf.readUInt16BE(0), buf[6]!, buf.subarray(7, 6 + length));
        buf = buf.subarray(6 + length);
      }
    });
  }

  private onRequest(socket: Socket, tid: number, unit: number, pdu: Buffer): void {
    const fc = pdu[0]!;
    const address = pdu.length >= 5 ? pdu.readUInt16BE(1) : 0;
    const count = pdu.length >= 5 ? pdu.readUInt16BE(3) : 0;
    this.seen.push({ tid, unit, fc, address, count });
    const index = this.seen.length;
    const reply = frame(tid, unit, answer(unit, fc, address, count));
    if (this.holdAfter >= 0) {
      this.held = { bytes: reply, tid, releaseAt: index + this.holdAfter };
      this.holdAfter = -1;
      return;
    }
    if (this.held && index >= this.held.releaseAt) {
      socket.write(this.held.bytes);
      this.late.push({ tid: this.held.tid, outstanding: tid });
      this.held = null;
    }
    socket.write(reply);
  }
}

function answer(unit: number, fc: number, address: number, count: number): Buffer {
  if (fc !== 3 && fc !== 4) return Buffer.from([fc | 0x80, 0x01]);
  if (count < 1 || count > 125) return Buffer.from([fc | 0x80, 0x03]);
  const out = Buffer.alloc(2 + count * 2);
  out[0] = fc;
  out[1] = count * 2;
  for (let i = 0; i < count; i++) out.writeUInt16BE(slaveValue(unit, address + i), 2 + i * 2);
  return out;
}

function frame(tid: number, unit: number, pdu: Buffer): Buffer {
  const head = Buffer.alloc(7);
  head.writeUInt16BE(tid, 0);
  head.writeUInt16BE(0, 2);
  head.writeUInt16BE(pdu.length + 1, 4);
  head[6] = unit;
  return Buffer.concat([head, pdu]);
}
