/**
 * The rig's own relay latency, measured beside the line: a spare socat pty pair like the ones the wire and
 * the gateway talk through, one byte every 50 ms, and how long until it is read at the other end (a tty
 * stream: woken by epoll, no polling). The wire judges collisions as if a byte handed to the gateway's pty
 * could be heard a character time later (1.15 ms at 9600 baud); on a loaded machine socat is scheduled late
 * and a byte can take several, both ways — this says how often, so a collision charged to the gateway can be
 * told from one the relay made.
 */
import type { ChildProcess } from 'node:child_process';
import { closeSync, constants, openSync, writeSync } from 'node:fs';
import path from 'node:path';
import tty from 'node:tty';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { kill, ptyPair } from './procs.js';

export class RelayProbe {
  private socat: ChildProcess | null = null;
  private writer: number | null = null;
  private reader: tty.ReadStream | null = null;
  private timer: NodeJS.Timeout | undefined;
  private sentAt = 0;
  private readonly samples: number[] = [];
  /** This process's own event-loop delay since the last mark(): a relay whose loop stalls hands bytes late. */
  private readonly loop: IntervalHistogram = monitorEventLoopDelay({ resolution: 1 });

  async start(dir: string): Promise<void> {
    this.loop.enable();
    const [a, b] = [path.join(dir, 'probe-a'), path.join(dir, 'probe-b')];
    this.socat = await ptyPair(a, b);
    this.writer = openSync(a, constants.O_RDWR | constants.O_NOCTTY | constants.O_NONBLOCK);
    this.reader = new tty.ReadStream(openSync(b, constants.O_RDWR | constants.O_NOCTTY | constants.O_NONBLOCK));
    this.reader.on('data', () => {
      if (this.sentAt > 0 && this.samples.length < 100_000) this.samples.push(performance.now() - this.sentAt);
      this.sentAt = 0;
    });
    this.reader.on('error', () => {});
    this.timer = setInterval(() => {
      if (this.sentAt > 0 || this.writer === null) return; // the last byte is still on its way
      this.sentAt = performance.now();
      writeSync(this.writer, Buffer.from([0x55]));
    }, 50);
  }

  /** Latencies measured since `from` (an index from mark()), in words. */
  summary(from = 0): string {
    const s = this.samples.slice(from).sort((x, y) => x - y);
    if (s.length === 0) return 'relay latency not measured';
    const q = (f: number): string => s[Math.floor(f * (s.length - 1))]!.toFixed(1);
    const late = s.filter((x) => x > 11_000 / 9600).length;
    return `relay latency (spare socat pair, ${s.length} bytes): median ${q(0.5)}, p99 ${q(0.99)}, max ${q(1)} ms; ${(100 * late / s.length).toFixed(1)}% over a character time; ` +
      `the relay's own event-loop delay p99 ${(this.loop.percentile(99) / 1e6).toFixed(1)}, max ${(this.loop.max / 1e6).toFixed(1)} ms`;
  }

  /** The `f` quantile of the latencies since `from`, ms (0 when none measured). */
  quantile(from: number, f: number): number {
    const s = this.samples.slice(from).sort((x, y) => x - y);
    return s.length === 0 ? 0 : s[Math.floor(f * (s.length - 1))]!;
  }

  mark(): number {
    this.loop.reset();
    return this.samples.length;
  }

  async stop(): Promise<void> {
    this.loop.disable();
    clearInterval(this.timer);
    this.reader?.destroy();
    if (this.writer !== null) closeSync(this.writer);
    this.writer = null;
    if (this.socat) await kill(this.socat);
  }
}
