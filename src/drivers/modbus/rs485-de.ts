/**
 * Bus option `rs485`, mode "gpio": the gateway drives the transceiver's DE/RE pin around each frame itself, for
 * boards whose UART cannot (no RTS on the header, no RS-485 support in its driver). DE goes high before the first
 * byte is written and low once the last byte has left the wire (protocol/modbus/rs485.ts deReleaseAt).
 *
 * Worse than the kernel's RS-485 mode or an adapter with automatic direction, and only for boards with no other
 * way: a slave may answer 3.5 characters after our last byte (4 ms at 9600 baud, 1.75 ms above 19200), and while
 * DE is still high our transceiver does not listen, so a late fall loses the answer's first bytes. The timer
 * that lowers it runs on the event loop, so a busy loop makes it late; how late is measured (`stats`).
 */
import type { GpioLine } from '../gpio/port.js';
import { deReleaseAt } from '../../protocol/modbus/rs485.js';
import type { LineDirection } from './serial-bytes.js';

/**
 * Node's timers fire on whole milliseconds of the loop's clock, up to a millisecond late: the last stretch (at most
 * this long) is waited out on the CPU, so DE falls within a fraction of a character of the frame's end.
 */
const SPIN_MS = 1.5;

export interface DeStats {
  /** Frames sent with DE driven. */
  frames: number;
  /** How late DE fell after the frame's computed end (ms): the last frame's, and the most of any. */
  lastLateMs: number;
  maxLateMs: number;
}

export class DePin implements LineDirection {
  readonly stats: DeStats = { frames: 0, lastLateMs: 0, maxLateMs: 0 };
  /** The frame DE is high for (a newer frame makes an older frame's release a no-op). */
  private frame = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly line: GpioLine, private readonly charMs: number, private readonly now: () => number = () => performance.now()) {}

  transmit(): void {
    this.frame++;
    clearTimeout(this.timer);
    this.timer = undefined;
    // Synchronous (one sysfs write): DE must be high before the write(2) that follows, and a thread-pool write
    // would come back after the frame had started.
    this.line.write(1);
  }

  sent(bytes: number, startedAt: number, drained: Promise<unknown>): void {
    const frame = this.frame;
    const settled = (): void => {
      if (frame !== this.frame) return;
      const at = deReleaseAt(startedAt, bytes, this.charMs, this.now());
      this.releaseAt(frame, at);
    };
    drained.then(settled, settled);
  }

  /** DE low, now (the line closes, the bus stops). */
  release(): void {
    this.frame++;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.line.write(0);
  }

  private releaseAt(frame: number, at: number): void {
    const wait = at - this.now();
    if (wait > SPIN_MS) {
      this.timer = setTimeout(() => this.releaseAt(frame, at), Math.floor(wait - SPIN_MS / 2));
      return;
    }
    if (frame !== this.frame) return;
    while (this.now() < at) { /* the last fraction of a millisecond: see SPIN_MS */ }
    this.line.write(0);
    const late = this.now() - at;
    this.timer = undefined;
    this.stats.frames++;
    this.stats.lastLateMs = late;
    if (late > this.stats.maxLateMs) this.stats.maxLateMs = late;
  }
}
