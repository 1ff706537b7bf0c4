/**
 * A serial port as a byte source with timestamps, for both RTU roles (the bus's master, rtu-reader.ts, and a
 * server's slave, runtime/persona/rtu-slave.ts): it owns the port's file descriptor, reads what waits with
 * non-blocking read(2) when serialport's poller says the tty is readable, stamps every chunk when it is read,
 * and writes frames with non-blocking write(2) — not fs.read/fs.write through libuv's thread pool, which cost
 * three thread-pool round trips per request and let a byte sit unheard in a read in flight while the master
 * listened before talking. What the bytes mean is the caller's.
 */
import { EventEmitter } from 'node:events';
import { existsSync, readSync, writeSync } from 'node:fs';
import { SerialPort } from 'serialport';
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

/** The port's settings (a bus's, or an RTU server's). */
export type SerialSettings = Pick<RtuOptions, 'path' | 'baudRate' | 'parity' | 'dataBits' | 'stopBits'>;

/** Whether a serial device node is there (devtmpfs, memory): is a vanished adapter back. */
export const serialPathPresent = (path: string): boolean => existsSync(path);

/** The poller's flag for "readable" (bindings-cpp's EVENTS.UV_READABLE). Its "writable" is never asked for. */
export const UV_READABLE = 1;

const isAgain = (err: unknown): boolean => {
  const code = (err as { code?: string }).code;
  return code === 'EAGAIN' || code === 'EWOULDBLOCK' || code === 'EINTR';
};

/** Emits 'error' (a read or poll failed: the line is lost; it closes itself) and 'close'. */
export class SerialBytes extends EventEmitter {
  /** Drives DE/RE around each frame (rs485 "gpio"); null when the UART or the adapter does it. */
  direction: LineDirection | null = null;
  /** When the last byte was read (performance.now(); 0: never). */
  lastByte = 0;
  /** When the kernel last had nothing waiting, as a read or the poller found (performance.now()). */
  drainedAt = -Infinity;
  /** When the poller was last asked to say readable (it is asked again after each time it says so). */
  armedAt = -Infinity;
  /** Whether the poller has been asked and has not said readable yet. */
  polling = false;
  private port: BoundPort | null = null;
  private closing = false;

  /** `onReadable`: the tty has bytes waiting (read them with `read`, then `poll` again). */
  constructor(private readonly settings: SerialSettings, private readonly onReadable: () => void,
    private readonly binding = SerialPort.binding as unknown as LineBinding) {
    super();
  }

  get isOpen(): boolean {
    return this.port !== null && this.port.isOpen && !this.closing;
  }

  /** Whether the port is open with a file descriptor to write to. */
  hasFd(): boolean {
    return typeof this.port?.fd === 'number';
  }

  /** Opens the port and waits for its first bytes (one open per object: a line is built per open). */
  async open(): Promise<void> {
    const { path, baudRate, dataBits, stopBits, parity } = this.settings;
    const port = await this.binding.open({ path, baudRate, dataBits, stopBits, parity });
    if (typeof port.fd !== 'number' || typeof port.poller?.poll !== 'function') {
      await port.close().catch(() => {});
      throw new Error(`${path}: this platform's serial binding has no fd poller (non-blocking reads need one)`);
    }
    this.port = port;
    port.poller.on('readable', this.readable);
    this.poll();
  }

  async close(): Promise<void> {
    const port = this.port;
    if (!port || this.closing) return;
    this.closing = true;
    try {
      if (port.isOpen) await port.close();
    } finally {
      this.port = null;
      this.emit('close');
    }
  }

  /**
   * Reads into `into[from, from + room)` what waits now; returns the bytes read (0: nothing waits, or the line
   * failed). Stamps `lastByte` when bytes came and `drainedAt` when the kernel's buffer was left empty.
   */
  read(into: Uint8Array, from: number, room: number): number {
    const fd = this.port?.fd;
    if (typeof fd !== 'number') return 0;
    let n: number;
    try {
      n = readSync(fd, into, from, room, null);
    } catch (err) {
      if (isAgain(err)) this.drainedAt = performance.now();
      else this.fail(err as Error);
      return 0;
    }
    const at = performance.now();
    if (n <= 0) {
      this.drainedAt = at; // 0 from a tty: nothing to read now
      return 0;
    }
    this.lastByte = at;
    if (n < room) this.drainedAt = at; // the kernel's buffer is empty: the poller says when more comes
    return n;
  }

  /** Asks the poller to say when bytes wait (once until it says so). */
  poll(): void {
    if (!this.port || this.closing || this.polling) return;
    this.polling = true;
    this.armedAt = performance.now();
    this.port.poller.poll(UV_READABLE);
  }

  /**
   * Whether the kernel known empty at `at` is as good as a read now: a byte that lands within `windowMs` (an
   * eighth of a character) was begun by a master that started together with this one, which no read can hear in time.
   */
  freshSince(at: number, windowMs: number): boolean {
    return performance.now() - at <= windowMs;
  }

  /**
   * Writes `data[offset, end)`; a full tty buffer (never for one frame in practice) is retried a millisecond later.
   * `startedAt`: when the frame's first write began (a retry's), for `direction`.
   */
  write(data: Uint8Array, offset: number, end: number, startedAt = -1): void {
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
      setTimeout(() => this.write(data, offset, end, startedAt), 1);
      return;
    }
    this.direction?.sent(end, startedAt, port?.drain?.() ?? Promise.resolve());
  }

  /** A read or poll failed (EIO: the adapter was unplugged, the pty's other end went away): the line is lost. */
  private fail(err: Error): void {
    if (this.closing) return;
    this.emit('error', err);
    void this.close().catch(() => {});
  }

  private readonly readable = (err: Error | null): void => {
    this.polling = false;
    if (this.closing || !this.port) return;
    if (err) {
      // libuv reports POLLERR (the other end gone) as EBADF. Not from inside the native callback: a
      // listener that throws there aborts the process.
      if (!(err as { canceled?: boolean }).canceled) process.nextTick(() => this.fail(err));
      return;
    }
    this.onReadable();
  };
}
