/** Deterministic value generators for simulated points (DESIGN §2 `sim` block). Pure. */
import type { SimPointBlock } from '../../config/types.js';

/** Small seeded PRNG (mulberry32): the same device and point walk the same way every run. */
export function seededRandom(seedText: string): () => number {
  let seed = 2166136261;
  for (let i = 0; i < seedText.length; i++) seed = Math.imul(seed ^ seedText.charCodeAt(i), 16777619);
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export interface Generator {
  /** The value the simulated device reports at time `now` (ms); a read advances counters and walks. */
  next(now: number): number | string;
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
    case 'random_walk': {
      const rnd = seededRandom(seedText);
      let v = typeof resumeFrom === 'number' ? resumeFrom : (block.min + block.max) / 2;
      return {
        next: () => {
          v = Math.min(block.max, Math.max(block.min, v + (rnd() * 2 - 1) * block.step));
          return v;
        },
      };
    }
    case 'counter': {
      // Resumes where the shadow left off, as a real counter keeps counting across a gateway restart.
      let v = typeof resumeFrom === 'number' ? resumeFrom : 0;
      const step = block.step ?? 1;
      return { next: () => (v += step) };
    }
  }
}
