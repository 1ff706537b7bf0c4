/**
 * History store bench: ingest CPU at 10k samples/s, raw query of one day at 1 s, 30-day hourly aggregate,
 * bytes per sample on disk and bytes written per byte of samples. Prints measured / target.
 * Run: node --import tsx scripts/bench/history.ts
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openHistory } from '../../src/store/history.js';
import { silentLogger } from '../../src/util/logger.js';

const DAY = 86_400_000;
const T0 = Date.UTC(2024, 0, 1);

function line(name: string, measured: string, target: string, ok: boolean): void {
  console.log(`${ok ? 'ok  ' : 'MISS'} ${name.padEnd(34)} ${measured.padStart(14)} / ${target}`);
}

async function median(runs: number, fn: () => Promise<unknown>): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  return times.sort((a, b) => a - b)[Math.floor(runs / 2)]!;
}

async function ingest(dir: string): Promise<void> {
  const clock = { t: T0, now(): number { return this.t; }, mono(): number { return this.t; } };
  // The buffer holds one flush interval at this rate (10 s x 10k/s), as docs/history.md advises.
  const store = await openHistory({ dir, clock, log: silentLogger, retention: 30 * DAY, maxDisk: 512 << 20, flushInterval: 0,
    bufferSamples: 131_072 });
  // 60 simulated seconds of 10,000 samples/s over 1,000 points, a flush every 10 s as in production.
  const seconds = 60;
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  for (let s = 0; s < seconds; s++) {
    clock.t = T0 + s * 1000;
    for (let i = 0; i < 10_000; i++) store.record(`dev${i % 50}`, `p${i % 20}`, clock.t + (i % 1000), i * 0.5);
    if (s % 10 === 9) await store.flush();
    // Real time passes between seconds: let a full buffer's early flush run, as it would live.
    else await new Promise((r) => setImmediate(r));
  }
  await store.flush();
  const cpu = process.cpuUsage(cpu0);
  const wall = performance.now() - wall0;
  const cpuMs = (cpu.user + cpu.system) / 1000;
  const st = store.stats();
  await store.close();
  line('ingest 10k samples/s: CPU', `${((cpuMs / (seconds * 1000)) * 100).toFixed(1)} %`, 'as low as possible (one core)', true);
  line('ingest throughput (burst)', `${Math.round((seconds * 10_000) / (wall / 1000))}/s`, '>= 10000/s', (seconds * 10_000) / (wall / 1000) >= 10_000);
  line('dropped samples', String(st.droppedSamples), '0', st.droppedSamples === 0);
  line('bytes/sample (log, 10 s flushes)', (st.bytesOnDisk / st.recordedSamples).toFixed(2), '<= 16', st.bytesOnDisk / st.recordedSamples <= 16);
}

async function month(dir: string): Promise<void> {
  const clock = { t: T0, now(): number { return this.t; }, mono(): number { return this.t; } };
  const store = await openHistory({ dir, clock, log: silentLogger, retention: 31 * DAY, maxDisk: 512 << 20, flushInterval: 0 });
  // 30 days of a 1 Hz temperature, plus 9 other 1 Hz points so segments are not single-series.
  const build0 = performance.now();
  let samples = 0;
  for (let s = 0; s < (30 * DAY) / 1000; s++) {
    const t = T0 + s * 1000;
    for (let p = 0; p < 10; p++) store.record('meter', `p${p}`, t, 20 + Math.sin(s / 3600) * 5 + p);
    samples += 10;
    if (s % 600 === 599) {
      clock.t = t;
      await store.flush();
    }
  }
  clock.t = T0 + 30 * DAY + 60_000;
  await store.flush();
  const buildS = (performance.now() - build0) / 1000;
  const st = store.stats();
  line('bytes/sample (30 days sealed)', (st.bytesOnDisk / samples).toFixed(2), '<= 16', st.bytesOnDisk / samples <= 16);
  // Flash written (log blocks, then each seal's tail) over the samples' own 12 bytes.
  const wrote = st.writtenBytes / (samples * 12);
  line('written / samples\' bytes (30 days)', `${wrote.toFixed(2)} ×`, '<= 1.5 ×', wrote <= 1.5);
  console.log(`     (${samples} samples, ${(st.bytesOnDisk / 1048576).toFixed(1)} MiB, ${st.segments} segments, built in ${buildS.toFixed(1)} s)`);

  const day = T0 + 14 * DAY;
  let rows = 0;
  const raw = await median(7, async () => (rows = (await store.readRaw('meter', 'p0', day, day + DAY, 100_000)).length));
  line(`raw query, one day at 1 s (${rows})`, `${raw.toFixed(1)} ms`, '<= 50 ms', raw <= 50 && rows === 86_400);
  let buckets = 0;
  const agg = await median(7, async () =>
    (buckets = (await store.aggregate('meter', 'p0', 'avg', 3_600_000, T0 + 1234, T0 + 30 * DAY - 5678)).length));
  line(`30-day hourly avg (${buckets} buckets)`, `${agg.toFixed(1)} ms`, '<= 100 ms', agg <= 100 && buckets === 720);
  const dayAgg = await median(7, () => store.aggregate('meter', 'p0', 'avg', 3_600_000, day, day + DAY));
  line('yesterday hourly avg', `${dayAgg.toFixed(2)} ms`, 'milliseconds', dayAgg < 20);
  await store.close();
}

const base = await mkdtemp(join(tmpdir(), 'sg-history-bench-'));
try {
  await ingest(join(base, 'ingest'));
  await month(join(base, 'month'));
} finally {
  await rm(base, { recursive: true, force: true });
}
