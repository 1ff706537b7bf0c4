/**
 * One input line: edges → software debounce → active_low → report. The debounce is "settle": after an
 * edge the line must stay quiet for `debounceMs`, then its level is read once and reported if the
 * logical value changed. A contact bouncing for 5 ms under a 20 ms debounce is one change, reported
 * 20 ms after the last bounce — straight away, not on the next poll.
 */
import type { Level } from './port.js';
import type { Edge } from './plan.js';
import type { TimerHandle, Timers } from './timers.js';

export interface InputOptions {
  edge: Edge;
  activeLow: boolean;
  debounceMs: number;
  timers: Timers;
  /** Physical level now. */
  read(): Level;
  /** A debounced change that matches `edge` (logical value). */
  report(value: Level): void;
  /** A read inside the debounce timer failed. */
  onError(error: Error): void;
}

const toLogical = (level: Level, activeLow: boolean): Level => (activeLow ? (level === 1 ? 0 : 1) : level);

export class DebouncedInput {
  /** Last settled logical value; null before the first read. */
  private last: Level | null = null;
  private pending: TimerHandle | undefined;
  private lastSample: Level | undefined;

  constructor(private readonly opts: InputOptions) {}

  get value(): Level | null {
    return this.last;
  }

  /** True while an edge is waiting out its debounce (a poll then leaves the point to the edge). */
  get settling(): boolean {
    return this.pending !== undefined;
  }

  /** The port saw an edge; `level` is what it read at the interrupt (unused when debouncing). */
  edge(level?: Level): void {
    const { debounceMs, timers } = this.opts;
    if (debounceMs <= 0) {
      this.settle(level ?? this.readSafe());
      return;
    }
    // Every bounce restarts the wait: only a quiet line is trusted.
    if (this.pending !== undefined) timers.clearTimeout(this.pending);
    this.pending = timers.setTimeout(() => {
      this.pending = undefined;
      const now = this.readSafe();
      if (now !== undefined) this.settle(now);
    }, debounceMs);
  }

  /** A poll: reads now, records the value as settled and returns it (logical). Throws on read errors. */
  poll(): Level {
    const value = toLogical(this.opts.read(), this.opts.activeLow);
    this.last = value;
    return value;
  }

  /** Fallback when the backend has no interrupts: a sampled level that differs is treated as an edge. */
  sample(): void {
    const level = this.readSafe();
    if (level === undefined) return;
    const moved = level !== this.lastSample;
    this.lastSample = level;
    // While settling only a new bounce restarts the wait; a steady changed level must be allowed to settle.
    if (this.settling) {
      if (moved) this.edge(level);
    } else if (toLogical(level, this.opts.activeLow) !== this.last) {
      this.edge(level);
    }
  }

  stop(): void {
    if (this.pending !== undefined) this.opts.timers.clearTimeout(this.pending);
    this.pending = undefined;
  }

  private settle(level: Level | undefined): void {
    if (level === undefined) return;
    const value = toLogical(level, this.opts.activeLow);
    if (value === this.last) return;
    this.last = value;
    // Like the kernel's edge setting: `rising` interrupts on 0→1 only; the poll still reports the rest.
    const { edge } = this.opts;
    if (edge === 'both' || (edge === 'rising' && value === 1) || (edge === 'falling' && value === 0)) this.opts.report(value);
  }

  private readSafe(): Level | undefined {
    try {
      return this.opts.read();
    } catch (e) {
      this.opts.onError(e as Error);
      return undefined;
    }
  }
}
