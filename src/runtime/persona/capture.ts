/**
 * Capture mode: what a consumer asks a persona (unit, function, address, count), how often (the interval
 * since the same request last came) and what it got back (the words, an exception, or silence). It is
 * how a persona for a new consumer is built, and how one is debugged when a firmware update starts
 * probing other registers. Only units with `capture` record (it costs an object per request).
 */
import type { Clock } from '../../core/clock.js';
import type { ServerRequest } from '../../protocol/modbus/pdu.js';

export const CAPTURE_ENTRIES = 500;

export interface CaptureEntry {
  /** Wall-clock time, epoch ms. */
  time: number;
  unit: number;
  fc: number;
  address: number;
  count: number;
  /** ms since the same unit/fc/address/count came last; null the first time. */
  interval_ms: number | null;
  answer: 'data' | 'write' | 'exception' | 'silent';
  exception?: number;
  words?: number[];
}

export class Capture {
  private readonly entries: CaptureEntry[] = [];
  private readonly last = new Map<string, number>();

  constructor(private readonly clock: Clock) {}

  record(unit: number, req: ServerRequest | { fc: number; address: number; count: number }, out: Uint8Array | null): void {
    const address = req.address;
    const count = 'count' in req ? req.count : 'values' in req ? req.values.length : 1;
    const key = `${unit}:${req.fc}:${address}:${count}`;
    const mono = this.clock.mono();
    const before = this.last.get(key);
    this.last.set(key, mono);
    const entry: CaptureEntry = {
      time: this.clock.now(), unit, fc: req.fc, address, count,
      interval_ms: before === undefined ? null : Math.round(mono - before), answer: 'silent',
    };
    if (out && out[0]! & 0x80) {
      entry.answer = 'exception';
      entry.exception = out[1]!;
    } else if (out && (out[0] === 3 || out[0] === 4)) {
      entry.answer = 'data';
      entry.words = Array.from({ length: out[1]! / 2 }, (_, i) => (out[2 + i * 2]! << 8) | out[3 + i * 2]!);
    } else if (out) {
      entry.answer = 'write';
    }
    this.entries.push(entry);
    if (this.entries.length > CAPTURE_ENTRIES) this.entries.shift();
  }

  list(): CaptureEntry[] {
    return [...this.entries];
  }

  clear(): void {
    this.entries.length = 0;
    this.last.clear();
  }
}
