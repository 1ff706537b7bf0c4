/** Shared fixtures for the history tests: temp dirs, a settable clock, a store factory. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type HistoryOptions, type HistoryStore, openHistory } from '../../src/store/history.js';
import { silentLogger } from '../../src/util/logger.js';

export class FakeClock {
  constructor(public t: number) {}
  now = (): number => this.t;
  // History stamps wall time only; durations of its own (flush timers) are not clock-driven here.
  mono = (): number => this.t;
}

export async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'sg-history-'));
  try {
    await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export function open(dir: string, clock: FakeClock, extra: Partial<HistoryOptions> = {}): Promise<HistoryStore> {
  return openHistory({
    dir, clock, log: silentLogger, retention: 30 * 86_400_000, maxDisk: 64 << 20, flushInterval: 0, ...extra,
  });
}

/** Deterministic PRNG so a failing random case can be replayed. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Rejects when `p` takes longer than `ms` (every awaited I/O in these tests has a bound). */
export function within<T>(p: Promise<T>, ms = 10_000): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
