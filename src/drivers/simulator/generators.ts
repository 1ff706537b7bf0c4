/** Deterministic value generators for simulated points (DESIGN §2 `sim` block). Pure. */
import type { SimPointBlock } from '../../config/types.js';

/** The walk's first state: FNV-1a of its device and point name. */
const seedOf = (seedText: string): number => {
  let seed = 2166136261;
  for (let i = 0; i < seedText.length; i++) seed = Math.imul(seed ^ seedText.charCodeAt(i), 16777619);
  return seed;
};

/**
 * mulberry32, a small seeded PRNG, as two steps: the next state, and the number in [0, 1) it gives. The same
 * device and point walk the same way every run.
 */
const mulberryNext = (seed: number): number => (seed + 0x6d2b79f5) | 0;
const mulberryValue = (seed: number): number => {
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};

export interface Generator {
  /** The value the simulated device reports at time `now` (ms); a read advances counters and walks. */
  next(now: number): number | string;
}

/**
 * The stateful generators are small classes, not closures: a fleet of 1,000 devices with 10 walking points each
 * holds 10,000 of them, and an object with three fields is a quarter of a closure with its two contexts.
 */
class RandomWalk implements Generator {
  constructor(private readonly block: Extract<SimPointBlock, { fn: 'random_walk' }>, private seed: number, private v: number) {}

  next(): number {
    this.seed = mulberryNext(this.seed);
    const { min, max, step } = this.block;
    this.v = Math.min(max, Math.max(min, this.v + (mulberryValue(this.seed) * 2 - 1) * step));
    return this.v;
  }
}

class Counter implements Generator {
  constructor(private readonly step: number, private v: number) {}

  next(): number {
    return (this.v += this.step);
  }
}

export function createGenerator(block: SimPointBlock, seedText: string, resumeFrom?: number | string): Generator {
  switch (block.fn) {
    case 'constant':
      return { next: () => block.value };
    case 'sine': {
      const mid = (block.min + block.max) / 2;
      const amp = (block.max - block.min) / 2;
      const period = block.period > 0 ? block.period : 60_000;
      return { next: (now) => mid + amp * Math.sin((2 * Math.PI * (now % period)) / period) };
    }
    case 'random_walk':
      return new RandomWalk(block, seedOf(seedText), typeof resumeFrom === 'number' ? resumeFrom : (block.min + block.max) / 2);
    case 'counter':
      // Resumes where the shadow left off, as a real counter keeps counting across a gateway restart.
      return new Counter(block.step ?? 1, typeof resumeFrom === 'number' ? resumeFrom : 0);
  }
}
