/**
 * A history seal's transient memory, measured: the history alone under fleet F's load (1,000 devices × 100
 * points, 10 of each device's points changing every second: 10,000 samples a second; every point's first value in
 * the first log), a flush every 10 s, the default max_disk 512 MB (8 MB logs), on a simulated clock. RSS, array
 * buffers and heap are sampled every 5 ms while each flush runs; a flush that rolls the log also seals it. For each
 * seal: the peak during that flush over the value just before it, beside the same figure for flushes that do not
 * seal (what a flush alone costs). A full GC before each flush starts every flush from the memory the process
 * needs (garbage left by earlier work would otherwise hide or inflate what this flush adds).
 * Run alone, with the unit's V8 flags: `node --expose-gc --max-semi-space-size=1 --max-old-space-size=192
 * --import tsx scripts/bench/seal-transient.ts` (`SEALS`, default 8).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openHistory } from '../../src/store/history.js';
import { silentLogger } from '../../src/util/logger.js';

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const SEALS = Number(process.env.SEALS ?? 8);
const MB = 2 ** 20;
const T0 = Date.UTC(2024, 0, 1);
const DEVICES = 1000;
const POINTS = 100;
const CHANGING = 10;
const SAMPLE_MS = 5;

interface Mem { rss: number; ab: number; heap: number }
const now = (): Mem => {
  const m = process.memoryUsage();
  return { rss: m.rss, ab: m.arrayBuffers, heap: m.heapUsed };
};

/** The peak of each figure while `work` runs, over the figure just before it. */
async function peakOver(work: () => Promise<void>): Promise<Mem> {
  const before = now();
  const peak = { ...before };
  const look = (): void => {
    const m = now();
    peak.rss = Math.max(peak.rss, m.rss);
    peak.ab = Math.max(peak.ab, m.ab);
    peak.heap = Math.max(peak.heap, m.heap);
  };
  const timer = setInterval(look, SAMPLE_MS);
  try {
    await work();
  } finally {
    clearInterval(timer);
  }
  look();
  return { rss: peak.rss - before.rss, ab: peak.ab - before.ab, heap: peak.heap - before.heap };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const mb = (b: number): string => (b / MB).toFixed(2).padStart(7);

const dir = await mkdtemp(join(tmpdir(), 'sg-seal-transient-'));
try {
  const clock = { t: T0, now(): number { return this.t; }, mono(): number { return this.t; } };
  const store = await openHistory({ dir, clock, log: silentLogger, retention: 30 * 86_400_000, maxDisk: 512 << 20, flushInterval: 0,
    maxSeries: 131_072, bufferSamples: 131_072 });
  console.log(`seal transient: history alone, fleet F's load (${DEVICES} × ${POINTS} points, ${DEVICES * CHANGING} samples/s, every point's first value in the first log), flush every 10 s, max_disk 512 MB, node ${process.version} ${process.execArgv.filter((a) => a.startsWith('--max')).join(' ')}; peaks sampled every ${SAMPLE_MS} ms over the value after a full GC before the flush`);
  console.log(' seal   RSS MB  array buffers MB  heap MB   (log MB sealed)');
  const plain: Mem[] = [];
  const seals: Mem[] = [];
  for (let s = 0; seals.length < SEALS; s++) {
    clock.t = T0 + s * 1000;
    for (let d = 0; d < DEVICES; d++) {
      const all = s === 0;
      for (let p = 0; p < (all ? POINTS : CHANGING); p++) store.record(`dev-${d}`, `p${p}`, clock.t, (s + d + p) % 10_000);
    }
    if (s % 10 !== 9) continue;
    const before = store.stats().compactions;
    const written = store.stats().writtenBytes;
    gc();
    const m = await peakOver(() => store.flush());
    if (store.stats().compactions === before) {
      plain.push(m);
      continue;
    }
    seals.push(m);
    console.log(`${String(seals.length).padStart(5)}  ${mb(m.rss)}  ${mb(m.ab).padStart(16)}  ${mb(m.heap)}   (${((store.stats().writtenBytes - written) / MB).toFixed(2)} MB written)`);
  }
  // The first seal holds every point's first value (100,000 series): the steady state is the rest.
  const steady = seals.slice(1);
  console.log(`median of seals 2..${SEALS}: RSS +${mb(median(steady.map((m) => m.rss))).trim()} MB, array buffers +${mb(median(steady.map((m) => m.ab))).trim()} MB, heap +${mb(median(steady.map((m) => m.heap))).trim()} MB; max RSS +${mb(Math.max(...steady.map((m) => m.rss))).trim()} MB`);
  console.log(`baseline, a flush that does not seal (median of ${plain.length}): RSS +${mb(median(plain.map((m) => m.rss))).trim()} MB, array buffers +${mb(median(plain.map((m) => m.ab))).trim()} MB, heap +${mb(median(plain.map((m) => m.heap))).trim()} MB`);
  await store.close();
} finally {
  await rm(dir, { recursive: true, force: true });
}
