/**
 * What the history keeps in memory per sealed segment, measured: fleet F's history load (1,000 devices × 10 changing
 * points = 10,000 samples a second, a flush every 10 s, the default max_disk 512 MB so 8 MB logs) on a simulated
 * clock, sealing until `SEALS` (default 12) segments exist, and after each seal the process's array-buffer and heap
 * bytes after a full GC. The slope is the memory a sealed segment costs for as long as it is kept: until max_disk
 * (about 512 MB / the sealed size) is reached, then flat.
 * Run alone: `node --expose-gc --import tsx scripts/bench/history-seals.ts`.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openHistory } from '../../src/store/history.js';
import { silentLogger } from '../../src/util/logger.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const SEALS = Number(process.env.SEALS ?? 12);
const MB = 2 ** 20;
const T0 = Date.UTC(2024, 0, 1);

const dir = await mkdtemp(join(tmpdir(), 'sg-seals-'));
try {
  const clock = { t: T0, now(): number { return this.t; }, mono(): number { return this.t; } };
  const store = await openHistory({ dir, clock, log: silentLogger, retention: 30 * 86_400_000, maxDisk: 512 << 20, flushInterval: 0,
    maxSeries: 100_000, bufferSamples: 131_072 });
  const mem = () => {
    gc();
    const m = process.memoryUsage();
    return { ab: m.arrayBuffers, heap: m.heapUsed };
  };
  const base = mem();
  console.log(`history seals: 10,000 samples/s (1,000 devices × 10 points), flush every 10 s, max_disk 512 MB; after GC, vs before any sample`);
  console.log('seals  sealed MB on disk  array buffers MB  heap MB  per seal MB');
  let seals = 0;
  const rows: number[] = [];
  for (let s = 0; seals < SEALS; s++) {
    clock.t = T0 + s * 1000;
    for (let d = 0; d < 1000; d++) for (let p = 0; p < 10; p++) store.record(`dev-${d}`, `i${p}`, clock.t, (s + d + p) % 10_000);
    if (s % 10 === 9) {
      await store.flush();
      const st = store.stats();
      if (st.compactions > seals) {
        seals = st.compactions;
        const m = mem();
        const total = m.ab + m.heap - base.ab - base.heap;
        rows.push(total);
        // From the second seal on: the first one's figure includes the buffers the first seal allocates and keeps.
        const slope = rows.length > 2 ? (rows[rows.length - 1]! - rows[1]!) / (rows.length - 2) / MB : NaN;
        console.log(`${String(seals).padStart(5)}  ${(st.bytesOnDisk / MB).toFixed(0).padStart(17)}  ${((m.ab - base.ab) / MB).toFixed(1).padStart(16)}  ${((m.heap - base.heap) / MB).toFixed(1).padStart(7)}  ${Number.isNaN(slope) ? '          -' : slope.toFixed(2).padStart(11)}`);
      }
    }
  }
  await store.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
