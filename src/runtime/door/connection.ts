/**
 * One client connection of a Modbus TCP server. Requests may be pipelined; they are answered strictly in
 * the order they came (a hit behind a slow miss waits for it), each with its own transaction id and unit,
 * so a client matching answers by position (many PLCs and simple libraries do) and one matching by id
 * both see the right answer. At most MAX_PIPELINE requests are open per connection: past that the socket
 * is paused (TCP flow control holds the client back) until answers go out, so memory stays bounded.
 * A stream that is not Modbus (bad protocol id or length) is closed: its framing cannot be found again.
 * The framing (MBAP, or RTU over TCP) is the listener's choice (framing.ts); order and bounds are the same.
 */
import type { Socket } from 'node:net';
import type { MbapFrame } from '../../protocol/modbus/mbap.js';
import { mbapFraming, type DoorFraming } from './framing.js';

export const MAX_PIPELINE = 16;

interface Slot {
  tid: number;
  unit: number;
  /** null: the request is answered with silence (a stale persona); undefined: still open. */
  answer: Uint8Array | null | undefined;
}

export class DoorConnection {
  private readonly slots: Slot[] = [];
  /** Frames read but not started (at most what one chunk held: the socket is paused meanwhile). */
  private readonly backlog: MbapFrame[] = [];
  private closed = false;
  readonly key: string;
  readonly address: string;

  constructor(private readonly socket: Socket, private readonly handle: (frame: MbapFrame) => Promise<Uint8Array | null>, private readonly onClose: () => void, private readonly framing: DoorFraming = mbapFraming()) {
    this.address = normalizeAddress(socket.remoteAddress ?? '');
    this.key = `${this.address}:${socket.remotePort ?? 0}`;
    socket.setNoDelay(true);
    // No idle timeout: a client polling once a minute must not race one. Keepalive finds dead peers.
    socket.setKeepAlive(true, 30_000);
    socket.on('data', (chunk: Buffer) => this.take(chunk));
    socket.on('error', () => {}); // a reset by the peer ends up in 'close'
    socket.on('close', () => {
      this.closed = true;
      this.onClose();
    });
  }

  get open(): number {
    return this.slots.length;
  }

  close(): void {
    this.socket.destroy();
  }

  private take(chunk: Buffer): void {
    const { frames, error } = this.framing.push(chunk);
    this.backlog.push(...frames);
    if (error) this.socket.destroy();
    this.pump();
  }

  /** Starts waiting frames up to MAX_PIPELINE open; reading pauses while any wait. */
  private pump(): void {
    while (this.slots.length < MAX_PIPELINE && this.backlog.length > 0) this.start(this.backlog.shift()!);
    if (this.closed) return;
    if (this.backlog.length > 0 || this.slots.length >= MAX_PIPELINE) this.socket.pause();
    else this.socket.resume();
  }

  private start(frame: MbapFrame): void {
    const slot: Slot = { tid: frame.tid, unit: frame.unit, answer: undefined };
    this.slots.push(slot);
    void this.handle(frame).then((pdu) => {
      slot.answer = pdu;
      this.flush();
    });
  }

  private flush(): void {
    while (this.slots.length > 0 && this.slots[0]!.answer !== undefined) {
      const slot = this.slots.shift()!;
      if (!this.closed && slot.answer) this.socket.write(this.framing.encode(slot.tid, slot.unit, slot.answer));
    }
    this.pump();
  }
}

/** `::ffff:192.168.1.5` (an IPv4 client on a dual-stack socket) is `192.168.1.5`. */
export const normalizeAddress = (address: string): string => address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, '$1');
